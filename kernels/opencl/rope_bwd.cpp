// rope_bwd on OpenCL: dx = dy rotated by the negative angle, rope's kernel (rope.cl) with the
// sines negated (host side in rope_launch.h).
#include "kernels/opencl/rope_launch.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_opencl("rope_bwd", float_dtypes(), [](OpCall& call) { return run_rope(call, -1.0f); }));
}  // namespace dnnb::opencl
