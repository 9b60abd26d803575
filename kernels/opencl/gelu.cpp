// gelu on OpenCL: the math is in gelu.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/gelu_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("gelu", opencl_source::gelu, false, /*half_tier=*/true));
}  // namespace dnnb::opencl
