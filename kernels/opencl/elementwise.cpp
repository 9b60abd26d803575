#include "kernels/opencl/elementwise.h"

#include "kernels/opencl/binary_body_cl.h"
#include "kernels/opencl/unary_body_cl.h"

namespace dnnb::opencl {

Status run_unary(OpCall& call, const std::string& program_name, const std::string& source) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input(program_name + ": expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != y.shape)
    return Status::bad_input(program_name + ": x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (y.numel() == 0) return Status::ok();
  const std::string options = build_options(**device, call.problem.dtype);
  if (is_flat(x) && is_flat(y)) {
    auto kernel = (*device)->kernel(program_name, source, "unary_flat", options);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(x)).add(cl_long{x.offset}).add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), program_name + "/unary_flat");
  }
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto kernel = (*device)->kernel(program_name, source, "unary_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, program_name + "/unary_rows");
}

Status run_binary(OpCall& call, const std::string& program_name, const std::string& source) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input(program_name + ": expects two inputs (a, b) and one output (y)");
  const Tensor& y = call.outputs[0];
  auto a = call.inputs[0].broadcast_to(y.shape);
  if (!a) return Status::bad_input(program_name + ": input a: " + a.status().message);
  auto b = call.inputs[1].broadcast_to(y.shape);
  if (!b) return Status::bad_input(program_name + ": input b: " + b.status().message);
  if (y.numel() == 0) return Status::ok();
  const std::string options = build_options(**device, call.problem.dtype);
  const Tensor& in_a = call.inputs[0];
  const Tensor& in_b = call.inputs[1];
  if (in_a.shape == y.shape && in_b.shape == y.shape && is_flat(in_a) && is_flat(in_b) && is_flat(y)) {
    auto kernel = (*device)->kernel(program_name, source, "binary_flat", options);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(in_a)).add(cl_long{in_a.offset}).add(cl_buffer(in_b)).add(cl_long{in_b.offset});
    args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), program_name + "/binary_flat");
  }
  auto ar = cl_rows(*a);
  if (!ar) return ar.status();
  auto br = cl_rows(*b);
  if (!br) return br.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto kernel = (*device)->kernel(program_name, source, "binary_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(*a)).add(*ar).add(cl_buffer(*b)).add(*br).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, program_name + "/binary_rows");
}

bool register_unary(const std::string& op, const char* op_source) {
  std::string source = program_source({op_source, opencl_source::unary_body});
  return register_opencl(op, float_dtypes(), [op, source](OpCall& call) { return run_unary(call, op, source); });
}

bool register_binary(const std::string& op, const char* op_source) {
  std::string source = program_source({op_source, opencl_source::binary_body});
  return register_opencl(op, float_dtypes(), [op, source](OpCall& call) { return run_binary(call, op, source); });
}

}  // namespace dnnb::opencl
