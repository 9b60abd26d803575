// max over the last dim on OpenCL: the reduction is in max.cl, the kernel in reduce_body.cl.
#include "kernels/opencl/reduce.h"
#include "kernels/opencl/max_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_reduce("max", opencl_source::max));
}  // namespace dnnb::opencl
