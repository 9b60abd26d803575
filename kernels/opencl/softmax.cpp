// softmax over the last dim on OpenCL (scale, softcap, additive broadcast mask): softmax.cl.
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/softmax_cl.h"

namespace dnnb::opencl {
namespace {

Status run_softmax(OpCall& call, const std::string& source) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const bool has_mask = call.inputs.size() == 2;
  if ((call.inputs.size() != 1 && !has_mask) || call.outputs.size() != 1)
    return Status::bad_input("softmax: expects inputs (x[, mask]) and one output (y)");
  auto scale = call.problem.get_double("scale", 1.0);
  if (!scale) return scale.status();
  auto softcap = call.problem.get_double("softcap", 0.0);
  if (!softcap) return softcap.status();
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != y.shape || x.ndim() == 0)
    return Status::bad_input("softmax: x " + x.describe() + " and y " + y.describe() + " must share a shape of >= 1 dim");
  auto mask = (has_mask ? call.inputs[1] : x).broadcast_to(x.shape);
  if (!mask) return Status::bad_input("softmax: mask: " + mask.status().message);
  if (y.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto mr = cl_rows(*mask);
  if (!mr) return mr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto kernel = (*device)->kernel("softmax", source, "softmax_rows", build_options(**device, call.problem.dtype));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(*mask)).add(*mr).add(cl_int{has_mask ? 1 : 0});
  args.add(static_cast<cl_float>(*scale)).add(static_cast<cl_float>(*softcap));
  args.add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, "softmax/softmax_rows");
}

bool register_softmax() {
  std::string source = program_source({opencl_source::softmax});
  return register_opencl("softmax", float_dtypes(), [source](OpCall& call) { return run_softmax(call, source); });
}

}  // namespace
DNNB_REGISTER(register_softmax());
}  // namespace dnnb::opencl
