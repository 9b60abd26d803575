// rope on OpenCL: each pair of x rotated by its position's f32 angle (rope.cl; host side in
// rope_launch.h).
#include "kernels/opencl/rope_launch.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_opencl("rope", float_dtypes(), [](OpCall& call) { return run_rope(call, 1.0f); }));
}  // namespace dnnb::opencl
