// add on OpenCL (numpy broadcasting of b and a to y): the math is in add.cl, the kernels in
// binary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/add_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_binary("add", opencl_source::add));
}  // namespace dnnb::opencl
