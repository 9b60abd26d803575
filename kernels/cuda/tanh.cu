// CUDA tanh: y = tanh(x) with the accurate tanhf (max 2 ulp).
// Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct TanhOp {
  __device__ float operator()(float x) const { return tanhf(x); }
};

DNNB_REGISTER(register_unary("tanh", TanhOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
