// lerp on OpenCL: y = a + w (b - a) with a scalar `weight` or a tensor w broadcast to y.
#include "kernels/opencl/lerp_cl.h"
#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {
namespace {

Status run_lerp(OpCall& call, const std::string& source) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const bool w_is_tensor = call.inputs.size() == 3;
  if ((call.inputs.size() != 2 && !w_is_tensor) || call.outputs.size() != 1)
    return Status::bad_input("lerp: expects inputs (a, b[, w]) and one output (y)");
  auto weight = call.problem.get_double("weight", 0.5);
  if (!weight) return weight.status();
  const Tensor& y = call.outputs[0];
  auto a = call.inputs[0].broadcast_to(y.shape);
  if (!a) return Status::bad_input("lerp: input a: " + a.status().message);
  auto b = call.inputs[1].broadcast_to(y.shape);
  if (!b) return Status::bad_input("lerp: input b: " + b.status().message);
  // Without a w tensor the kernel never reads w; any valid buffer stands in.
  auto w = (w_is_tensor ? call.inputs[2] : call.inputs[0]).broadcast_to(y.shape);
  if (!w) return Status::bad_input("lerp: input w: " + w.status().message);
  if (y.numel() == 0) return Status::ok();
  const std::string options = build_options(**device, call.problem.dtype);
  const cl_int w_flag = w_is_tensor ? 1 : 0;
  const cl_float scalar = static_cast<cl_float>(*weight);

  bool flat = is_flat(y);
  for (const Tensor& t : call.inputs) flat = flat && t.shape == y.shape && is_flat(t);
  if (flat) {
    const Tensor& wt = w_is_tensor ? call.inputs[2] : call.inputs[0];
    auto kernel = opencl_kernel(**device, "lerp", source, "lerp_flat", options);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(call.inputs[0])).add(cl_long{call.inputs[0].offset});
    args.add(cl_buffer(call.inputs[1])).add(cl_long{call.inputs[1].offset});
    args.add(cl_buffer(wt)).add(cl_long{wt.offset}).add(w_flag).add(scalar);
    args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), "lerp/lerp_flat");
  }
  auto ar = cl_rows(*a);
  if (!ar) return ar.status();
  auto br = cl_rows(*b);
  if (!br) return br.status();
  auto wr = cl_rows(*w);
  if (!wr) return wr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto kernel = opencl_kernel(**device, "lerp", source, "lerp_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(*a)).add(*ar).add(cl_buffer(*b)).add(*br).add(cl_buffer(*w)).add(*wr);
  args.add(w_flag).add(scalar).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, "lerp/lerp_rows");
}

bool register_lerp() {
  std::string source = program_source({opencl_source::lerp});
  return register_opencl("lerp", float_dtypes(), [source](OpCall& call) { return run_lerp(call, source); });
}

}  // namespace
DNNB_REGISTER(register_lerp());
}  // namespace dnnb::opencl
