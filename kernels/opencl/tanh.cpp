// tanh on OpenCL: the math is in tanh.cl, the kernels in unary_body.cl.
#include "kernels/opencl/elementwise.h"
#include "kernels/opencl/tanh_cl.h"

namespace dnnb::opencl {
// f32 default unary_flat: on the H200 it measured 267 us against 287 us for unary_chunks, with
// the same 16-byte accesses for f32 (no reason for unary_chunks to be faster there).
DNNB_REGISTER(register_unary("tanh", opencl_source::tanh, /*f32_default_flat=*/true, /*half_tier=*/true));
}  // namespace dnnb::opencl
