// tanh on OpenCL: the math is in tanh.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/tanh_cl.h"

namespace dnnb::opencl {
// f32 contiguous views take unary_flat (register_unary's f32_flat).
DNNB_REGISTER(register_unary("tanh", opencl_source::tanh, /*f32_flat=*/true, /*half_tier=*/true));
}  // namespace dnnb::opencl
