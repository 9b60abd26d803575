// The scaled product in float64: a @ b by matmul's reference (dense f64 copies of any dtype and
// layout), then each element times its row's scale_a and its column's scale_b.
#include "reference/matmul_f8.h"

#include "reference/access.h"
#include "reference/matmul.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::reference {

Status matmul_f8(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 4, outputs, 1, "matmul_f8"));
  auto d = ops::matmul_f8_desc(problem);
  if (!d) return d.status();
  const int64_t m = d->gemm.m, n = d->gemm.n;
  const bool row = d->scale == ops::F8Scale::row;
  auto sa = dense_f64(inputs[2], "scale_a");
  if (!sa) return sa.status();
  auto sb = dense_f64(inputs[3], "scale_b");
  if (!sb) return sb.status();
  if (static_cast<int64_t>(sa->size()) != (row ? m : 1) || static_cast<int64_t>(sb->size()) != (row ? n : 1))
    return Status::bad_input("reference matmul_f8: scale_a/scale_b do not match " + problem.to_string());
  const std::vector<Tensor> ab = {inputs[0], inputs[1]};
  DNNB_TRY(matmul(problem, ab, outputs));
  auto y = f64_output(outputs[0], {m, n}, "y");
  if (!y) return y.status();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) (*y)[i * n + j] *= (*sa)[row ? i : 0] * (*sb)[row ? j : 0];
  return Status::ok();
}

}  // namespace dnnb::reference
