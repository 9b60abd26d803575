// CUDA div: y = a / b with numpy broadcasting of a and b to y's shape. IEEE division (nvcc's
// default -prec-div=true): correctly rounded in f32.
// Kernels: kernels/cuda/elementwise.cuh (flat 16-byte path when nothing broadcasts, else rows).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }
};

DNNB_REGISTER(register_binary("div", DivOp{}));
// "wide": broadcast / strided layouts with 4 loads per input in flight per lane (awaiting
// measurement, docs/cuda.md); same-shape contiguous inputs as "".
DNNB_REGISTER(register_binary("div", DivOp{}, "wide"));

}  // namespace
}  // namespace dnnb::cuda_kernels
