// CUDA gelu_tanh: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), F.gelu(approximate='tanh').
// Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct GeluTanhOp {
  __device__ float operator()(float x) const {
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);  // sqrt(2/pi) * ...
    return 0.5f * x * (1.f + tanhf(inner));
  }
};

DNNB_REGISTER(register_unary("gelu_tanh", GeluTanhOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
