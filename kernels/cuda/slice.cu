// CUDA slice: y = x.narrow(dim, start, len).contiguous(). A bit-exact copy of the narrowed view
// of x (kernels/cuda/copy_common.cuh): per-row copies with 16-byte chunks when every row start
// of the view and of y is 16-byte aligned, element by element otherwise; a transposed x takes
// the tiled transpose. Only the slice is read.
#include "kernels/cuda/copy_common.cuh"
#include "suites/ops/layout_desc.h"

namespace dnnb::cuda_kernels {
namespace {

Status run_slice(OpCall& call) {
  auto device = layout::layout_call_device(call, {"x"});
  if (!device) return device.status();
  auto d = ops::slice_desc(call.problem);
  if (!d) return d.status();
  auto view = call.inputs[0].slice(d->dim, d->start, d->length);
  if (!view) return view.status();
  return layout::copy_view(**device, *view, call.outputs[0], "slice");
}

DNNB_REGISTER(register_cuda("slice", "", "", {DType::f32, DType::f16, DType::bf16}, run_slice));

}  // namespace
}  // namespace dnnb::cuda_kernels
