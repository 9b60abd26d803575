// sum over the last dim on OpenCL: the reduction is in sum.cl, the kernel in reduce_body.cl.
#include "kernels/opencl/reduce.h"
#include "kernels/opencl/sum_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_reduce("sum", opencl_source::sum));
}  // namespace dnnb::opencl
