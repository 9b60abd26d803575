// CUDA permute: y = x.permute(perm).contiguous() for any permutation of up to 4 dims, any input
// strides (transposed, padded views). A bit-exact copy of the permuted view of x into y
// (kernels/cuda/copy_common.cuh): when x's unit-stride dim stays innermost the copy is a batch of
// rows (16-byte chunks where aligned); when it moves, a shared-memory tiled transpose of that dim
// against y's innermost one, the other dims a batch. Merging dims contiguous in both views first
// turns e.g. perm=2301 into a plain 2-D transpose.
#include "kernels/cuda/copy_common.cuh"
#include "suites/ops/layout_desc.h"

namespace dnnb::cuda_kernels {
namespace {

Status run_permute(OpCall& call) {
  auto device = layout::layout_call_device(call, {"x"});
  if (!device) return device.status();
  auto order = ops::permute_order(call.problem);
  if (!order) return order.status();
  auto view = call.inputs[0].permute(*order);
  if (!view) return view.status();
  return layout::copy_view(**device, *view, call.outputs[0], "permute");
}

DNNB_REGISTER(register_cuda("permute", "", "", {DType::f32, DType::f16, DType::bf16}, run_permute));

}  // namespace
}  // namespace dnnb::cuda_kernels
