// CUDA div: y = a / b with numpy broadcasting of a and b to y's shape. IEEE division (nvcc's
// default -prec-div=true): correctly rounded in f32.
// Kernels: kernels/cuda/elementwise.cuh (flat when nothing broadcasts, the broadcast tile, rows).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }
};

DNNB_REGISTER(register_binary("div", DivOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
