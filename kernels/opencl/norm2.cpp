// norm2 over the last dim on OpenCL: the reduction is in norm2.cl, the kernel in reduce_body.cl.
#include "kernels/opencl/reduce.h"
#include "kernels/opencl/norm2_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_reduce("norm2", opencl_source::norm2));
}  // namespace dnnb::opencl
