// CUDA mean over the last dim: y = sum_c x[c] / N, accumulated in f32; one division at the end.
// Kernels and launch shapes: kernels/cuda/row_reduce.cuh (warp or block per row, split rows).
#include "kernels/cuda/row_reduce.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct MeanReducer {
  __device__ float pad() const { return 0.f; }
  __device__ float identity() const { return 0.f; }
  __device__ float pre(float x) const { return x; }
  __device__ float combine(float a, float b) const { return a + b; }
  __device__ float finish(float acc, int64_t cols) const { return acc / static_cast<float>(cols); }
};

DNNB_REGISTER(register_row_reduce("mean", MeanReducer{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
