// dequantize_blocks on OpenCL: x in a block format -> y (f32, f16, bf16), one work-item per
// 32-value block (quantize_blocks.cl): an exact decode, then one rounding to y's dtype by the
// prelude's store (vstore_half_rte; the bf16 RNE encoder). y is contiguous; x's rows may be padded.
#include "kernels/opencl/quantize_blocks.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/quantize_blocks_cl.h"
#include "suites/ops/blocks_desc.h"

namespace dnnb::opencl {
namespace {

Status run_dequantize(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("opencl dequantize_blocks: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != y.shape)
    return Status::bad_input("opencl dequantize_blocks: x " + x.describe() + " and y " + y.describe() +
                             " differ in shape");
  if (!y.is_contiguous()) return Status::unsupported("opencl dequantize_blocks: y " + y.describe() + " is not contiguous");
  auto options = block_options(**device, x.dtype, "opencl dequantize_blocks");
  if (!options) return options.status();
  if (y.numel() == 0) return Status::ok();
  static const std::string source = program_source({opencl_source::quantize_blocks});
  auto kernel = opencl_kernel(**device, "quantize_blocks", source, "dequantize_blocks",
                              build_options(**device, y.dtype, *options));
  if (!kernel) return kernel.status();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(cl_long{y.offset});
  DNNB_TRY(args.status());
  return launch_flat(**device, *kernel, y.numel() / 32, "dequantize_blocks", 1);
}

}  // namespace

DNNB_REGISTER(register_opencl("dequantize_blocks", ops::block_formats(), run_dequantize));

}  // namespace dnnb::opencl
