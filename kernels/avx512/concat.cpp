// concat: y = torch.cat([a, b], dim): a and b each copied into their part of y (y narrowed
// along dim: a view) by the layout copy engine (strided_copy.h), memcpy of rows where both
// sides are unit-stride along the last dim. Bit-exact.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/strided_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::avx512 {
namespace {

Status concat_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::concat_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_concat(OpCall& call) {
  auto d = ops::concat_desc(call.problem);
  if (!d) return d.status();
  const Tensor& y = call.outputs.at(0);
  auto ya = y.slice(d->dim, 0, d->a[d->dim]);
  if (!ya) return ya.status();
  auto yb = y.slice(d->dim, d->a[d->dim], d->b[d->dim]);
  if (!yb) return yb.status();
  DNNB_TRY(copy_view(*ya, call.inputs.at(0)));
  return copy_view(*yb, call.inputs.at(1));
}

DNNB_REGISTER(register_kernel("concat", {DType::f32, DType::f16, DType::bf16}, concat_supports, run_concat));

}  // namespace
}  // namespace dnnb::avx512
