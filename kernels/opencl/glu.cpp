#include "kernels/opencl/glu.h"

#include "kernels/opencl/glu_body_cl.h"
#include "kernels/opencl/glu_math_cl.h"
#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {
namespace {

Status run_glu(OpCall& call, const std::string& program_name, const std::string& source, bool backward) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const size_t n_inputs = backward ? 3 : 2, n_outputs = backward ? 2 : 1;
  if (call.inputs.size() != n_inputs || call.outputs.size() != n_outputs)
    return Status::bad_input(call.problem.op + (backward ? ": expects inputs (a, b, dy) and outputs (da, db)"
                                                         : ": expects inputs (a, b) and one output (y)"));
  const Tensor& first = call.outputs[0];
  for (const Tensor& t : call.inputs)
    if (t.shape != first.shape || t.dtype != first.dtype)
      return Status::bad_input(call.problem.op + ": input " + t.describe() + " does not match " + first.describe());
  for (const Tensor& t : call.outputs)
    if (t.shape != first.shape || t.dtype != first.dtype)
      return Status::bad_input(call.problem.op + ": output " + t.describe() + " does not match " + first.describe());
  const int64_t n = first.numel();
  if (n == 0) return Status::ok();
  const std::string options = build_options(**device, call.problem.dtype);
  const std::string kernel_base = backward ? "glu_bwd" : "glu";

  bool flat = true;
  for (const Tensor& t : call.inputs) flat = flat && is_flat(t);
  for (const Tensor& t : call.outputs) flat = flat && is_flat(t);
  if (flat) {
    const std::string name = kernel_base + "_flat";
    auto kernel = opencl_kernel(**device, program_name, source, name.c_str(), options);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    for (const Tensor& t : call.inputs) args.add(cl_buffer(t)).add(cl_long{t.offset});
    for (const Tensor& t : call.outputs) args.add(cl_buffer(t)).add(cl_long{t.offset});
    args.add(cl_long{n});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, n, program_name + "/" + name);
  }
  const std::string name = kernel_base + "_rows";
  auto kernel = opencl_kernel(**device, program_name, source, name.c_str(), options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  for (const std::vector<Tensor>* list : {&call.inputs, &call.outputs}) {
    for (const Tensor& t : *list) {
      auto rows = cl_rows(t);
      if (!rows) return rows.status();
      args.add(cl_buffer(t)).add(*rows);
    }
  }
  DNNB_TRY(args.status());
  auto out_rows = cl_rows(first);
  if (!out_rows) return out_rows.status();
  return launch_elementwise_rows(**device, *kernel, out_rows->rows, out_rows->cols, program_name + "/" + name);
}

}  // namespace

bool register_glu(const std::string& op, const std::string& program_name, const char* gate_source, bool backward) {
  const std::string source = program_source({opencl_source::glu_math, gate_source, opencl_source::glu_body});
  return register_opencl(op, float_dtypes(),
                         [=](OpCall& call) { return run_glu(call, program_name, source, backward); });
}

}  // namespace dnnb::opencl
