// exp on OpenCL: the math is in exp.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/exp_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_unary("exp", opencl_source::exp));
}  // namespace dnnb::opencl
