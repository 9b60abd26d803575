// geglu on OpenCL: y = g(a) b, with the gate
// of geglu.cl; kernels in glu_body.cl, host side in glu.cpp.
#include "core/registry.h"
#include "kernels/opencl/geglu_cl.h"
#include "kernels/opencl/glu.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_glu("geglu", "geglu", opencl_source::geglu, /*backward=*/false));
}  // namespace dnnb::opencl
