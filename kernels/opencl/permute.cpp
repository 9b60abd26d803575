// permute on OpenCL: y = x.permute(perm).contiguous(), a bit-exact copy (layout_copy.cl): row
// copies when the innermost dim stays innermost, tiled transposes through local memory when it
// moves.
#include "kernels/opencl/layout_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::opencl {
namespace {

Status run_permute(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  DNNB_TRY(expect_io(call, 1, 1, "one input (x) and one output (y)"));
  auto order = ops::permute_order(call.problem);
  if (!order) return order.status();
  auto view = call.inputs[0].permute(*order);
  if (!view) return view.status();
  return copy_view(**device, *view, call.outputs[0], "permute");
}

bool register_permute() { return register_opencl("permute", float_dtypes(), run_permute); }

}  // namespace
DNNB_REGISTER(register_permute());
}  // namespace dnnb::opencl
