// CUDA max over the last dim: y = max_c x[c] (torch.amax). NaN propagates as in torch: a NaN
// operand wins. Padding reads -inf, which never wins.
// Kernels and launch shapes: kernels/cuda/row_reduce.cuh (warp or block per row, split rows).
#include "kernels/cuda/row_reduce.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct MaxReducer {
  __device__ float pad() const { return -INFINITY; }
  __device__ float identity() const { return -INFINITY; }
  __device__ float pre(float x) const { return x; }
  __device__ float combine(float a, float b) const { return (a > b || a != a) ? a : b; }
  __device__ float finish(float acc, int64_t /*cols*/) const { return acc; }
};

DNNB_REGISTER(register_row_reduce("max", MaxReducer{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
