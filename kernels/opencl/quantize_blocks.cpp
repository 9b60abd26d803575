// quantize_blocks on OpenCL: x (f32, f16, bf16; any layout) -> y in a block format, one
// work-item per 32-value block (quantize_blocks.cl), bit for bit as core/dtype.cpp's
// quantize_row. One program per (source dtype, format).
#include "kernels/opencl/quantize_blocks.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/quantize_blocks_cl.h"
#include "suites/ops/blocks_desc.h"

namespace dnnb::opencl {

Result<std::string> block_options(const OpenCLDevice& device, DType format, const std::string& what) {
  int code = 0;
  switch (format) {
    case DType::q8_0: code = 0; break;
    case DType::q4_0: code = 1; break;
    case DType::mxfp8: code = 2; break;
    case DType::mxfp4: code = 3; break;
    case DType::mxfp8_e5m2: code = 4; break;
    default: return Status::unsupported(what + ": " + dtype_name(format) + " is not a block format");
  }
  if (format == DType::q8_0 || format == DType::q4_0) {
    cl_device_fp_config fp = 0;
    DNNB_CL_TRY(clGetDeviceInfo(device.device_id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr));
    if ((fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) == 0)
      return Status::unsupported(what + ": " + dtype_name(format) +
                                 " scales divide in f32, and this device has no correctly rounded divide "
                                 "(CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)");
  }
  return "-DBLK_FORMAT=" + std::to_string(code) + " -DBLK_BYTES=" + std::to_string(block_bytes(format));
}

namespace {

Status run_quantize(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("opencl quantize_blocks: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != y.shape)
    return Status::bad_input("opencl quantize_blocks: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (!y.is_contiguous()) return Status::unsupported("opencl quantize_blocks: y " + y.describe() + " is not contiguous");
  auto options = block_options(**device, y.dtype, "opencl quantize_blocks");
  if (!options) return options.status();
  if (y.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  static const std::string source = program_source({opencl_source::quantize_blocks});
  auto kernel = opencl_kernel(**device, "quantize_blocks", source, "quantize_blocks",
                              build_options(**device, x.dtype, *options));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(cl_long{y.offset / 32});
  DNNB_TRY(args.status());
  return launch_flat(**device, *kernel, y.numel() / 32, "quantize_blocks", 1);
}

}  // namespace

DNNB_REGISTER(register_opencl("quantize_blocks", {DType::f32, DType::f16, DType::bf16}, run_quantize));

}  // namespace dnnb::opencl
