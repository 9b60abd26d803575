// mean over the last dim on OpenCL: the reduction is in mean.cl, the kernel in reduce_body.cl.
#include "kernels/opencl/reduce.h"
#include "kernels/opencl/mean_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_reduce("mean", opencl_source::mean));
}  // namespace dnnb::opencl
