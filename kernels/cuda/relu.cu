// CUDA relu: y = max(x, 0). A NaN passes through (x < 0 is false), as torch.relu does.
// Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct ReluOp {
  __device__ float operator()(float x) const { return x < 0.f ? 0.f : x; }
};

DNNB_REGISTER(register_unary("relu", ReluOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
