// quantize_linear on OpenCL (docs/ops-family4.md, "quantize_linear and dequantize_linear"):
// kernels/opencl/qlinear.cl through qlinear.h.
#include "kernels/opencl/qlinear.h"

namespace dnnb::opencl {
namespace {

Status run_quantize(OpCall& call) { return qlinear::run(call, true); }

}  // namespace

DNNB_REGISTER(register_opencl("quantize_linear", {DType::f32}, run_quantize));

}  // namespace dnnb::opencl
