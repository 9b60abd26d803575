// CUDA silu: y = x * sigmoid(x), computed as x / (1 + exp(-x)) (one rounding fewer than x * (1 /
// ...)). Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct SiluOp {
  __device__ float operator()(float x) const { return x / (1.f + expf(-x)); }
};

DNNB_REGISTER(register_unary("silu", SiluOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
