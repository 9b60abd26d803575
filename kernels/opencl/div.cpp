// div on OpenCL (numpy broadcasting of b and a to y): the math is in div.cl, the kernels in
// binary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/div_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_binary("div", opencl_source::div));
}  // namespace dnnb::opencl
