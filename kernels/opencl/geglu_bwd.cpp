// geglu_bwd on OpenCL: da = dy b g'(a), db = dy g(a), with the gate
// of geglu.cl; kernels in glu_body.cl, host side in glu.cpp.
#include "core/registry.h"
#include "kernels/opencl/geglu_cl.h"
#include "kernels/opencl/glu.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_glu("geglu_bwd", "geglu", opencl_source::geglu, /*backward=*/true));
}  // namespace dnnb::opencl
