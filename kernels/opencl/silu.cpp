// silu on OpenCL: the math is in silu.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/silu_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("silu", opencl_source::silu, false, /*half_tier=*/true));
}  // namespace dnnb::opencl
