// gemv on OpenCL: y[b] = w @ x[b] for 1..16 vectors (gemv.cl): 8 rows of w per work-group of
// 256 items, w read once for the whole batch. Any strides; y of the problem dtype or f32.
#include <algorithm>
#include <string>

#include "kernels/opencl/gemm.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::opencl {
namespace {

constexpr size_t kWorkGroup = 256;       // DNNB_GEMV_WG
constexpr int64_t kRowsPerGroup = 8;     // DNNB_GEMV_ROWS
constexpr size_t kMaxGroups = size_t{1} << 20;  // the kernel's grid-stride loop covers the rest

Status run_gemv(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("gemv: expects inputs (w, x) and one output (y)");
  auto desc = ops::gemv_desc(call.problem);
  if (!desc) return desc.status();
  const DType dtype = call.problem.dtype;
  const Tensor& w = call.inputs[0];
  const Tensor& x = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (w.dtype != dtype || x.dtype != dtype)
    return Status::unsupported("opencl gemv: w and x must be of the problem dtype " + std::string(dtype_name(dtype)));
  if (y.dtype != dtype && y.dtype != DType::f32)
    return Status::unsupported("opencl gemv: output y of " + std::string(dtype_name(y.dtype)) + " (the kernel writes " +
                               dtype_name(dtype) + " or f32)");
  if (w.ndim() != 2 || x.ndim() != 2 || y.ndim() != 2)
    return Status::bad_input("gemv: w, x and y must be 2-D, got " + w.describe() + ", " + x.describe() + ", " +
                             y.describe());
  auto kernel = opencl_kernel(**device, kProductProgram, product_source(), "gemv_rows", build_options(**device, dtype));
  if (!kernel) return kernel.status();
  const cl_int y_f32 = y.dtype == DType::f32 && dtype != DType::f32;
  KernelArgs args(*kernel);
  args.add(cl_buffer(w)).add(cl_long{w.offset}).add(cl_long{w.strides[0]}).add(cl_long{w.strides[1]});
  args.add(cl_buffer(x)).add(cl_long{x.offset}).add(cl_long{x.strides[0]}).add(cl_long{x.strides[1]});
  args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.strides[0]}).add(cl_long{y.strides[1]}).add(y_f32);
  args.add(cl_long{desc->n}).add(cl_long{desc->k}).add(static_cast<cl_int>(desc->m));
  DNNB_TRY(args.status());
  const size_t groups = std::min(static_cast<size_t>((desc->n + kRowsPerGroup - 1) / kRowsPerGroup), kMaxGroups);
  const size_t global = groups * kWorkGroup;
  return enqueue(**device, *kernel, 1, &global, &kWorkGroup, "gemv/gemv_rows");
}

bool register_gemv() { return register_opencl("gemv", float_dtypes(), run_gemv); }

}  // namespace
DNNB_REGISTER(register_gemv());
}  // namespace dnnb::opencl
