// slice: y = x.narrow(dim, start, len).contiguous(): the narrowed view of x copied into y by
// the layout copy engine (strided_copy.h), memcpy of rows when the last dim is unit-stride.
// Bit-exact.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/strided_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::avx512 {
namespace {

Status slice_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::slice_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_slice(OpCall& call) {
  auto d = ops::slice_desc(call.problem);
  if (!d) return d.status();
  auto view = call.inputs.at(0).slice(d->dim, d->start, d->length);
  if (!view) return view.status();
  return copy_view(call.outputs.at(0), *view);
}

DNNB_REGISTER(register_kernel("slice", {DType::f32, DType::f16, DType::bf16}, slice_supports, run_slice));

}  // namespace
}  // namespace dnnb::avx512
