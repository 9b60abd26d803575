// slice on OpenCL: y = x.narrow(dim, start, len).contiguous(), a bit-exact copy of the slice's
// view (layout_copy.cl); only the slice is read.
#include "kernels/opencl/layout_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::opencl {
namespace {

Status run_slice(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  DNNB_TRY(expect_io(call, 1, 1, "one input (x) and one output (y)"));
  auto d = ops::slice_desc(call.problem);
  if (!d) return d.status();
  auto view = call.inputs[0].slice(d->dim, d->start, d->length);
  if (!view) return view.status();
  return copy_view(**device, *view, call.outputs[0], "slice");
}

bool register_slice() { return register_opencl("slice", float_dtypes(), run_slice); }

}  // namespace
DNNB_REGISTER(register_slice());
}  // namespace dnnb::opencl
