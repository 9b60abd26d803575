// CUDA mul: y = a * b with numpy broadcasting of a and b to y's shape.
// Kernels: kernels/cuda/elementwise.cuh (flat when nothing broadcasts, the broadcast tile, rows).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
};

DNNB_REGISTER(register_binary("mul", MulOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
