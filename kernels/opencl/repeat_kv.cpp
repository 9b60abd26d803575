// repeat_kv on OpenCL: y = x.repeat_interleave(n_rep, dim=1), a bit-exact copy
// (layout_copy.cl) from x seen as [B, H, n_rep, S, D] with stride 0 on the repeat dim into y
// seen as the same shape.
#include "kernels/opencl/layout_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::opencl {
namespace {

Status run_repeat_kv(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  DNNB_TRY(expect_io(call, 1, 1, "one input (x) and one output (y)"));
  auto d = ops::repeat_kv_desc(call.problem);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.ndim() != 4 || y.ndim() != 4)
    return Status::bad_input("repeat_kv: x " + x.describe() + " and y " + y.describe() + " must be 4-D");
  Tensor src = x;
  src.shape = {x.shape[0], x.shape[1], d->n_rep, x.shape[2], x.shape[3]};
  src.strides = {x.strides[0], x.strides[1], 0, x.strides[2], x.strides[3]};
  Tensor dst = y;
  dst.shape = src.shape;
  dst.strides = {y.strides[0], y.strides[1] * d->n_rep, y.strides[1], y.strides[2], y.strides[3]};
  return copy_view(**device, src, dst, "repeat_kv");
}

bool register_repeat_kv() { return register_opencl("repeat_kv", float_dtypes(), run_repeat_kv); }

}  // namespace
DNNB_REGISTER(register_repeat_kv());
}  // namespace dnnb::opencl
