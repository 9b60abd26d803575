// swiglu_bwd on OpenCL: da = dy b g'(a), db = dy g(a), with the gate
// of swiglu.cl; kernels in glu_body.cl, host side in glu.cpp.
#include "core/registry.h"
#include "kernels/opencl/glu.h"
#include "kernels/opencl/swiglu_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_glu("swiglu_bwd", "swiglu", opencl_source::swiglu, /*backward=*/true));
}  // namespace dnnb::opencl
