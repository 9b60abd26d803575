// layernorm_stats and rmsnorm_stats on OpenCL: norm_stats.cl, one work-group per row (sized by
// row_geometry), the statistics written to f32 views of one value per row.
#include "kernels/opencl/norm_stats_cl.h"
#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {
namespace {

Status run_norm_stats(OpCall& call, bool centered) {
  const char* op = centered ? "layernorm_stats" : "rmsnorm_stats";
  auto device = opencl_device(call);
  if (!device) return device.status();
  const size_t n_out = centered ? 2 : 1;
  if (call.inputs.size() != 1 || call.outputs.size() != n_out)
    return Status::bad_input(std::string(op) + ": expects input x and outputs " + (centered ? "mean, rstd" : "rstd"));
  auto eps = call.problem.get_double("eps", centered ? 1e-5 : 1e-6);
  if (!eps) return eps.status();
  const Tensor& x = call.inputs[0];
  if (x.ndim() == 0) return Status::bad_input(std::string(op) + ": x " + x.describe() + " needs >= 1 dim");
  Shape stats = x.shape;
  stats.back() = 1;
  for (const Tensor& out : call.outputs)
    if (out.shape != stats || out.dtype != DType::f32)
      return Status::bad_input(std::string(op) + ": output " + out.describe() + " must be f32 of shape " +
                               shape_to_string(stats));
  if (x.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  std::vector<ClRows> out_rows;
  for (const Tensor& out : call.outputs) {
    auto rows = cl_rows(out);
    if (!rows) return rows.status();
    out_rows.push_back(*rows);
  }
  const std::string source = program_source({opencl_source::norm_stats});
  const std::string name = std::string(op) + "_rows";
  auto kernel = opencl_kernel(**device, "norm_stats", source, name.c_str(), build_options(**device, call.problem.dtype));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(static_cast<cl_float>(*eps));
  for (size_t i = 0; i < n_out; ++i) args.add(cl_buffer(call.outputs[i])).add(out_rows[i]);
  args.add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, name);
}

}  // namespace
DNNB_REGISTER(register_opencl("layernorm_stats", float_dtypes(), [](OpCall& call) { return run_norm_stats(call, true); }));
DNNB_REGISTER(register_opencl("rmsnorm_stats", float_dtypes(), [](OpCall& call) { return run_norm_stats(call, false); }));
}  // namespace dnnb::opencl
