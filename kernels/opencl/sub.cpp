// sub on OpenCL (numpy broadcasting of b and a to y): the math is in sub.cl, the kernels in
// binary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/sub_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_binary("sub", opencl_source::sub));
}  // namespace dnnb::opencl
