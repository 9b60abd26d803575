#include "kernels/opencl/reduce.h"

#include "kernels/opencl/reduce_body_cl.h"

namespace dnnb::opencl {
namespace {

Status run_reduce(OpCall& call, const std::string& program_name, const std::string& source) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input(program_name + ": expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.ndim() == 0) return Status::bad_input(program_name + ": x must have at least one dim");
  Shape reduced(x.shape.begin(), x.shape.end() - 1);
  if (y.shape != reduced)
    return Status::bad_input(program_name + ": y " + y.describe() + " is not x " + x.describe() +
                             " without its last dim");
  if (y.numel() == 0) return Status::ok();
  if (x.shape.back() == 0) return Status::unsupported(program_name + ": reduction over an empty dim");
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto yr = cl_rows(with_unit_last_dim(y));
  if (!yr) return yr.status();
  auto kernel = (*device)->kernel(program_name, source, "reduce_rows", build_options(**device, call.problem.dtype));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, program_name + "/reduce_rows");
}

}  // namespace

bool register_reduce(const std::string& op, const char* op_source) {
  std::string source = program_source({op_source, opencl_source::reduce_body});
  return register_opencl(op, float_dtypes(), [op, source](OpCall& call) { return run_reduce(call, op, source); });
}

}  // namespace dnnb::opencl
