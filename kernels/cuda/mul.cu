// CUDA mul: y = a * b with numpy broadcasting of a and b to y's shape.
// Kernels: kernels/cuda/elementwise.cuh (flat 16-byte path when nothing broadcasts, else rows;
// the variants below).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};

DNNB_REGISTER(register_binary("mul", MulOp{}));
// "": row (1 x C) and column (R x 1) broadcasts of contiguous tensors with C % 8 (16-bit) or
// C % 4 (f32) == 0 through elementwise_tile_kernel, 4 rows of one 16-byte column vector per
// thread (the variant "tile" in session 7; "flat2d", one vector per thread, before), other
// non-flat layouts as "wide" (elementwise.cuh, ElementwisePlan::binary); "wide": such layouts
// through the wide rows kernel for f32 and the rows kernel for f16/bf16 (the default before);
// "rows": the rows kernel for every dtype (the default before that).
DNNB_REGISTER(register_binary("mul", MulOp{}, "wide", ElementwisePlan::wide));
DNNB_REGISTER(register_binary("mul", MulOp{}, "rows", ElementwisePlan::rows));

}  // namespace
}  // namespace dnnb::cuda_kernels
