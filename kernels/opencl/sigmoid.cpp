// sigmoid on OpenCL: the math is in sigmoid.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/sigmoid_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("sigmoid", opencl_source::sigmoid, false, /*half_tier=*/true));
}  // namespace dnnb::opencl
