// The integer product in float64: matmul's reference (dense f64 copies of any dtype and layout,
// one i-k-j loop nest) after matmul_i8's own checks; every partial sum is an integer of
// magnitude below 2^31, so float64 holds it exactly and the result is torch._int_mm's bit for bit.
#include "reference/matmul_i8.h"

#include "reference/matmul.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::reference {

Status matmul_i8(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto d = ops::matmul_i8_desc(problem);
  if (!d) return d.status();
  return matmul(problem, inputs, outputs);
}

}  // namespace dnnb::reference
