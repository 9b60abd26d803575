// cast: load_element then store_element, the core's exact decode and its torch-exact encode.
// A source element is exact in f32 (every value of f16, bf16 and the fp8 formats is an f32), so
// store_element's double -> f32 step changes nothing and the conversion rounds once, as torch's
// casts do (each goes through float: c10's Half, BFloat16 and Float8 types convert from float).
#include "reference/cast.h"

#include <cstdint>

#include "reference/access.h"
#include "suites/ops/cast_desc.h"

namespace dnnb::reference {

Status cast(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, "cast"));
  auto target = ops::cast_target(problem);
  if (!target) return target.status();
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto y = f64_output(outputs[0], inputs[0].shape, "y");
  if (!y) return y.status();
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView row = x->row(r);
    double* out = *y + r * x->cols();
    for (int64_t c = 0; c < x->cols(); ++c) {
      uint32_t slot = 0;  // one element of the target
      store_element(&slot, *target, 0, row[c]);
      out[c] = load_element(&slot, *target, 0);
    }
  }
  return Status::ok();
}

}  // namespace dnnb::reference
