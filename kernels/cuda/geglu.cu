// CUDA geglu: y = gelu_tanh(a) b, gelu_tanh(a) = 0.5 a (1 + tanh u) written in its sigmoid form
// a / (1 + exp(-2u)), u = sqrt(2/pi) (a + 0.044715 a^3): no 1 + tanh cancellation for a < 0,
// one exp and one division. Kernel and launch shape: kernels/cuda/elementwise.cuh, f32 math,
// one rounding.
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct GeGluOp {
  __device__ float operator()(float a, float b) const {
    // 2u = a (2k + 2k 0.044715 a^2), k = sqrt(2/pi)
    const float two_u = a * fmaf(0.07135481627260025f, a * a, 1.5957691216057308f);
    return a / (1.f + expf(-two_u)) * b;
  }
};

Status run_geglu(OpCall& call) { return run_elementwise<2>(call, {"a", "b"}, GeGluOp{}); }

DNNB_REGISTER(register_cuda("geglu", "", "", {DType::f32, DType::f16, DType::bf16}, run_geglu));

}  // namespace
}  // namespace dnnb::cuda_kernels
