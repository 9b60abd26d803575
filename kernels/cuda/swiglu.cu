// CUDA swiglu: y = silu(a) b, silu(a) written a / (1 + exp(-a)) (as silu.cu: one rounding fewer
// than a * sigmoid(a); -0 for a -> -inf). Kernel and launch shape: kernels/cuda/elementwise.cuh
// (flat 16-byte vectors for contiguous operands, the rows kernel for strided ones), f32 math,
// one rounding.
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct SwiGluOp {
  __device__ float operator()(float a, float b) const { return a / (1.f + expf(-a)) * b; }
};

Status run_swiglu(OpCall& call) { return run_elementwise<2>(call, {"a", "b"}, SwiGluOp{}); }

DNNB_REGISTER(register_cuda("swiglu", "", "", {DType::f32, DType::f16, DType::bf16}, run_swiglu));

}  // namespace
}  // namespace dnnb::cuda_kernels
