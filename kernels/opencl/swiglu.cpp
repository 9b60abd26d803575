// swiglu on OpenCL: y = g(a) b, with the gate
// of swiglu.cl; kernels in glu_body.cl, host side in glu.cpp.
#include "core/registry.h"
#include "kernels/opencl/glu.h"
#include "kernels/opencl/swiglu_cl.h"

namespace dnnb::opencl {
DNNB_REGISTER(register_glu("swiglu", "swiglu", opencl_source::swiglu, /*backward=*/false));
}  // namespace dnnb::opencl
