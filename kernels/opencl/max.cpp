// max over the last dim on OpenCL: the reduction is in max.cl, the kernels in reduce_body.cl and,
// for f16/bf16, max16.cl.
#include "kernels/opencl/reduce.h"
#include "kernels/opencl/max16_cl.h"
#include "kernels/opencl/max_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_reduce("max", opencl_source::max, opencl_source::max16));
}  // namespace dnnb::opencl
