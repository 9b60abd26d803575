// gelu_tanh on OpenCL: the math is in gelu_tanh.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/gelu_tanh_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("gelu_tanh", opencl_source::gelu_tanh, false, /*half_tier=*/true));
}  // namespace dnnb::opencl
