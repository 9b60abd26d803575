// mul on OpenCL (numpy broadcasting of b and a to y): the math is in mul.cl, the kernels in
// binary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/mul_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_binary("mul", opencl_source::mul));
}  // namespace dnnb::opencl
