// concat on OpenCL: y = torch.cat([a, b], dim) as two bit-exact copies (layout_copy.cl), a into
// y's first a.shape[dim] entries of dim and b into the rest.
#include "kernels/opencl/layout_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::opencl {
namespace {

Status run_concat(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  DNNB_TRY(expect_io(call, 2, 1, "inputs (a, b) and one output (y)"));
  auto d = ops::concat_desc(call.problem);
  if (!d) return d.status();
  const Tensor& y = call.outputs[0];
  auto ya = y.slice(d->dim, 0, d->a[d->dim]);
  if (!ya) return ya.status();
  auto yb = y.slice(d->dim, d->a[d->dim], d->b[d->dim]);
  if (!yb) return yb.status();
  DNNB_TRY(copy_view(**device, call.inputs[0], *ya, "concat"));
  return copy_view(**device, call.inputs[1], *yb, "concat");
}

bool register_concat() { return register_opencl("concat", float_dtypes(), run_concat); }

}  // namespace
DNNB_REGISTER(register_concat());
}  // namespace dnnb::opencl
