// relu on OpenCL: the math is in relu.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/relu_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("relu", opencl_source::relu));
}  // namespace dnnb::opencl
