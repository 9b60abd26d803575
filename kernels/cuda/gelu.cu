// CUDA gelu: y = 0.5 x (1 + erf(x / sqrt 2)) (F.gelu, approximate='none'); erff is accurate to 2
// ulp. Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct GeluOp {
  __device__ float operator()(float x) const {
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  }
};

DNNB_REGISTER(register_unary("gelu", GeluOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
