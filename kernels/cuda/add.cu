// CUDA add: y = a + b with numpy broadcasting of a and b to y's shape.
// Kernels: kernels/cuda/elementwise.cuh (flat 16-byte path when nothing broadcasts, else rows).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

DNNB_REGISTER(register_binary("add", AddOp{}));
// "wide": broadcast / strided layouts with 4 loads per input in flight per lane (awaiting
// measurement, docs/cuda.md); same-shape contiguous inputs as "".
DNNB_REGISTER(register_binary("add", AddOp{}, "wide"));

}  // namespace
}  // namespace dnnb::cuda_kernels
