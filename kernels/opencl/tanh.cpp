// tanh on OpenCL: the math is in tanh.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/tanh_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("tanh", opencl_source::tanh));
}  // namespace dnnb::opencl
