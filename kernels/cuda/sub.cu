// CUDA sub: y = a - b with numpy broadcasting of a and b to y's shape.
// Kernels: kernels/cuda/elementwise.cuh (flat 16-byte path when nothing broadcasts, else rows;
// the variants below).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct SubOp {
  __device__ float operator()(float a, float b) const { return a - b; }
};

DNNB_REGISTER(register_binary("sub", SubOp{}));
// "": broadcasts and other non-flat layouts through the wide rows kernel for f32, the rows
// kernel for f16/bf16 (elementwise.cuh, ElementwisePlan::binary); "rows": the rows kernel for
// every dtype (the default before 2026-11-21); "flat2d": row (1 x C) and column (R x 1)
// broadcasts of contiguous tensors with C % 8 (16-bit) or C % 4 (f32) == 0 as one flat
// vectorised pass, other layouts as "".
DNNB_REGISTER(register_binary("sub", SubOp{}, "rows", ElementwisePlan::rows));
DNNB_REGISTER(register_binary("sub", SubOp{}, "flat2d", ElementwisePlan::flat2d));

}  // namespace
}  // namespace dnnb::cuda_kernels
