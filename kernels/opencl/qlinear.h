// The host side of quantize_linear and dequantize_linear on OpenCL (the kernels are qlinear.cl):
// one program per (op, integer type, channel mode, alignment); contiguous x takes qlinear_flat
// (16 elements a work-item step), any other layout qlinear_rows (an element a work-item).
#pragma once
#include <string>

#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/qlinear_cl.h"
#include "suites/ops/qlinear_desc.h"

namespace dnnb::opencl::qlinear {

inline Status run(OpCall& call, bool quantize) {
  const char* op = quantize ? "quantize_linear" : "dequantize_linear";
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 3 || call.outputs.size() != 1)
    return Status::bad_input(std::string("opencl ") + op + ": expects inputs x, scale, zero_point and output y");
  auto d = ops::qlinear_desc(call.problem, quantize);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  const Tensor& scale = call.inputs[1];
  const Tensor& zp = call.inputs[2];
  const Tensor& y = call.outputs[0];
  const DType real = DType::f32;
  if (x.dtype != (quantize ? real : d->qtype) || y.dtype != (quantize ? d->qtype : real))
    return Status::bad_input(std::string("opencl ") + op + ": x is " + dtype_name(x.dtype) + " and y " + dtype_name(y.dtype));
  if (scale.dtype != DType::f32 || zp.dtype != DType::i32 || scale.numel() != d->channels || zp.numel() != d->channels ||
      !scale.is_contiguous() || !zp.is_contiguous() || scale.offset != 0 || zp.offset != 0)
    return Status::bad_input(std::string("opencl ") + op + ": scale (f32) and zero_point (i32) must be whole buffers of " +
                             std::to_string(d->channels) + " elements");
  if (x.shape != y.shape || !y.is_contiguous())
    return Status::bad_input(std::string("opencl ") + op + ": y must be contiguous with x's shape");
  if (y.numel() == 0) return Status::ok();
  cl_device_fp_config fp = 0;
  DNNB_CL_TRY(clGetDeviceInfo((*device)->device_id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr));
  if (quantize && !(fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT))
    return Status::unsupported("opencl quantize_linear: the device has no correctly rounded f32 division (1 / scale)");
  const bool flat = x.is_contiguous();
  int mode = d->per_channel() ? 2 : 0;
  if (flat && d->per_channel() && d->inner % 16 == 0) mode = 1;
  bool aligned = false;
  if (flat) {
    cl_uint base_align_bits = 0;
    DNNB_CL_TRY(clGetDeviceInfo((*device)->device_id(), CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(base_align_bits),
                                &base_align_bits, nullptr));
    aligned = base_align_bits >= 512 && x.offset % 16 == 0 && y.offset % 16 == 0;
  }
  const std::string options = std::string("-DQL_QUANTIZE=") + (quantize ? "1" : "0") +
                              " -DQL_SIGNED=" + (d->qtype == DType::i8 ? "1" : "0") + " -DQL_MODE=" + std::to_string(mode) +
                              " -DQL_ALIGNED=" + (aligned ? "1" : "0");
  static const std::string source = program_source({opencl_source::qlinear});
  auto kernel = opencl_kernel(**device, "qlinear", source, flat ? "qlinear_flat" : "qlinear_rows",
                              build_options(**device, DType::f32, options));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  const cl_long inner = d->inner, channels = d->channels;
  if (flat) {
    args.add(cl_buffer(x)).add(cl_long{x.offset}).add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    args.add(cl_buffer(scale)).add(cl_buffer(zp)).add(inner).add(channels);
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), std::string(op) + "/qlinear_flat", 16);
  }
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(cl_long{y.offset});
  args.add(cl_buffer(scale)).add(cl_buffer(zp)).add(inner).add(channels);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, xr->rows, xr->cols, std::string(op) + "/qlinear_rows", 1);
}

}  // namespace dnnb::opencl::qlinear
