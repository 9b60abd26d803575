// CUDA exp: y = exp(x) with the accurate expf (max 2 ulp; overflows to inf like torch).
// Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
};

DNNB_REGISTER(register_unary("exp", ExpOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
