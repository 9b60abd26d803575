// CUDA concat: y = torch.cat([a, b], dim). Two bit-exact copies (kernels/cuda/copy_common.cuh),
// a into y's first a.shape[dim] positions of dim and b into the rest: per-row copies with 16-byte
// chunks when every row start of both views is 16-byte aligned (e.g. 8192x4096 halves of an
// 8192x8192 y), element by element otherwise; a transposed input takes the tiled transpose.
// The two launches follow each other on the device's stream.
#include "kernels/cuda/copy_common.cuh"
#include "suites/ops/layout_desc.h"

namespace dnnb::cuda_kernels {
namespace {

Status run_concat(OpCall& call) {
  auto device = layout::layout_call_device(call, {"a", "b"});
  if (!device) return device.status();
  auto d = ops::concat_desc(call.problem);
  if (!d) return d.status();
  const Tensor& y = call.outputs[0];
  auto y_a = y.slice(d->dim, 0, d->a[d->dim]);
  if (!y_a) return y_a.status();
  auto y_b = y.slice(d->dim, d->a[d->dim], d->b[d->dim]);
  if (!y_b) return y_b.status();
  DNNB_TRY(layout::copy_view(**device, call.inputs[0], *y_a, "concat"));
  return layout::copy_view(**device, call.inputs[1], *y_b, "concat");
}

DNNB_REGISTER(register_cuda("concat", "", "", {DType::f32, DType::f16, DType::bf16}, run_concat));

}  // namespace
}  // namespace dnnb::cuda_kernels
