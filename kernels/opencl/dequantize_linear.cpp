// dequantize_linear on OpenCL (docs/ops-family4.md, "quantize_linear and dequantize_linear"):
// kernels/opencl/qlinear.cl through qlinear.h.
#include "kernels/opencl/qlinear.h"

namespace dnnb::opencl {
namespace {

Status run_dequantize(OpCall& call) { return qlinear::run(call, false); }

}  // namespace

DNNB_REGISTER(register_opencl("dequantize_linear", {DType::i8, DType::u8}, run_dequantize));

}  // namespace dnnb::opencl
