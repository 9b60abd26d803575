// CUDA repeat_kv: y = x.repeat_interleave(n_rep, dim=1), x [B, H, S, D] -> y [B, H * n_rep, S, D].
// y is seen as [B, H, n_rep, S, D] and x as the same shape with stride 0 on n_rep; the copy
// (kernels/cuda/copy_common.cuh) takes that repeated dim out, so each element of x is loaded
// once and stored n_rep times (16-byte chunks where every row start is aligned). The S and D of
// a head are contiguous in both, so a contiguous x is one row of S * D elements per head.
#include "kernels/cuda/copy_common.cuh"
#include "suites/ops/layout_desc.h"

namespace dnnb::cuda_kernels {
namespace {

Status run_repeat_kv(OpCall& call) {
  auto device = layout::layout_call_device(call, {"x"});
  if (!device) return device.status();
  auto d = ops::repeat_kv_desc(call.problem);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != call.problem.shape || y.shape != d->y)
    return Status::bad_input("cuda repeat_kv: x " + x.describe() + " and y " + y.describe() + " do not match " +
                             call.problem.to_string());
  const int64_t heads = x.shape[1];
  Tensor src = x, dst = y;
  src.shape = {x.shape[0], heads, d->n_rep, x.shape[2], x.shape[3]};
  src.strides = {x.strides[0], x.strides[1], 0, x.strides[2], x.strides[3]};
  dst.shape = src.shape;
  dst.strides = {y.strides[0], y.strides[1] * d->n_rep, y.strides[1], y.strides[2], y.strides[3]};
  return layout::copy_view(**device, src, dst, "repeat_kv");
}

DNNB_REGISTER(register_cuda("repeat_kv", "", "", {DType::f32, DType::f16, DType::bf16}, run_repeat_kv));

}  // namespace
}  // namespace dnnb::cuda_kernels
