// rmsnorm over the last dim on OpenCL (torch and gemma forms): rmsnorm.cl.
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/rmsnorm_cl.h"

namespace dnnb::opencl {
namespace {

Status run_rmsnorm(OpCall& call, const std::string& source) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("rmsnorm: expects inputs (x, w) and one output (y)");
  auto eps = call.problem.get_double("eps", 1e-6);
  if (!eps) return eps.status();
  const std::string form = call.problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input("rmsnorm: form='" + form + "' (expected torch or gemma)");
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (x.ndim() == 0 || x.shape != y.shape)
    return Status::bad_input("rmsnorm: x " + x.describe() + " and y " + y.describe() + " must share a shape of >= 1 dim");
  if (w.shape != Shape{x.shape.back()})
    return Status::bad_input("rmsnorm: w " + w.describe() + " must be [" + std::to_string(x.shape.back()) + "]");
  if (y.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto wr = cl_rows(w);
  if (!wr) return wr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto kernel = (*device)->kernel("rmsnorm", source, "rmsnorm_rows", build_options(**device, call.problem.dtype));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(w)).add(*wr).add(static_cast<cl_float>(*eps));
  args.add(cl_int{form == "gemma" ? 1 : 0}).add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, "rmsnorm/rmsnorm_rows");
}

bool register_rmsnorm() {
  std::string source = program_source({opencl_source::rmsnorm});
  return register_opencl("rmsnorm", float_dtypes(), [source](OpCall& call) { return run_rmsnorm(call, source); });
}

}  // namespace
DNNB_REGISTER(register_rmsnorm());
}  // namespace dnnb::opencl
