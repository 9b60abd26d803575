// What the OpenCL quantize_blocks and dequantize_blocks hosts share: the build options of a block
// format for quantize_blocks.cl.
#pragma once
#include <string>

#include "core/dtype.h"
#include "core/status.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb::opencl {

// "-DBLK_FORMAT=f -DBLK_BYTES=n" for a block format; unsupported for another dtype, and for q8_0
// and q4_0 on a device without a correctly rounded f32 divide (their scales divide as the host
// does: amax / 127, max / -8, 1 / d). `what` names the op in the message.
Result<std::string> block_options(const OpenCLDevice& device, DType format, const std::string& what);

}  // namespace dnnb::opencl
