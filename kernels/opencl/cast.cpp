// cast on OpenCL: y = x.to(dtype) between f32, f16, bf16, f8_e4m3fn and f8_e5m2, every pair, bit
// for bit as core/dtype.cpp (the conversions and kernels are in cast.cl). One program per (source,
// target) pair and step width; contiguous x and y take cast_flat (16 bytes of the narrower format
// per work-item step, typed vector accesses when both offsets are whole steps), any other layout
// cast_rows.
#include <algorithm>

#include "kernels/opencl/cast_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "suites/ops/cast_desc.h"

namespace dnnb::opencl {
namespace {

Result<int> format_code(DType dtype) {
  switch (dtype) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::bf16: return 2;
    case DType::f8_e4m3fn: return 3;
    case DType::f8_e5m2: return 4;
    default: return Status::unsupported(std::string("opencl cast: no format ") + dtype_name(dtype));
  }
}

// True when a contiguous view at element `offset` can be read in typed steps of `bytes` bytes: the
// offset is a whole number of steps and the device aligns buffers to at least 64 bytes (the
// widest step, 16 f32).
Result<bool> step_aligned(const OpenCLDevice& device, int64_t offset, int64_t step) {
  cl_uint base_align_bits = 0;
  DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(base_align_bits),
                              &base_align_bits, nullptr));
  return base_align_bits >= 512 && offset % step == 0;
}

Status run_cast(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("opencl cast: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  auto target = ops::cast_target(call.problem);
  if (!target) return target.status();
  if (x.dtype != call.problem.dtype || y.dtype != *target)
    return Status::bad_input("opencl cast: x is " + std::string(dtype_name(x.dtype)) + " and y " + dtype_name(y.dtype) +
                             ", the problem casts " + dtype_name(call.problem.dtype) + " to " + dtype_name(*target));
  if (x.shape != y.shape)
    return Status::bad_input("opencl cast: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (y.numel() == 0) return Status::ok();
  auto src = format_code(x.dtype);
  if (!src) return src.status();
  auto dst = format_code(y.dtype);
  if (!dst) return dst.status();
  // A step is 16 bytes of the narrower format: 4, 8 or 16 elements.
  const int64_t step = 16 / static_cast<int64_t>(std::min(dtype_size(x.dtype), dtype_size(y.dtype)));
  static const std::string source = program_source({opencl_source::cast});
  // The prelude wants a storage dtype (-DDNNB_F32); cast.cl uses its own formats, not dnnb_t.
  const std::string formats = "-DCAST_SRC=" + std::to_string(*src) + " -DCAST_DST=" + std::to_string(*dst) +
                              " -DCAST_E=" + std::to_string(step);
  if (x.is_contiguous() && y.is_contiguous()) {
    auto x_aligned = step_aligned(**device, x.offset, step);
    if (!x_aligned) return x_aligned.status();
    auto y_aligned = step_aligned(**device, y.offset, step);
    if (!y_aligned) return y_aligned.status();
    const bool aligned = *x_aligned && *y_aligned;
    auto kernel = opencl_kernel(**device, "cast", source, "cast_flat",
                                build_options(**device, DType::f32, formats + " -DCAST_ALIGNED=" + (aligned ? "1" : "0")));
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(x)).add(cl_long{x.offset}).add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), "cast/cast_flat", step);
  }
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  if (xr->rows != yr->rows || xr->cols != yr->cols)
    return Status::unsupported("opencl cast: x " + x.describe() + " and y " + y.describe() +
                               " do not split into the same rows");
  auto kernel = opencl_kernel(**device, "cast", source, "cast_rows", build_options(**device, DType::f32, formats + " -DCAST_ALIGNED=0"));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, "cast/cast_rows", step);
}

}  // namespace

DNNB_REGISTER(register_opencl("cast", ops::cast_dtypes(), run_cast));

}  // namespace dnnb::opencl
