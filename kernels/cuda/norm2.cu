// CUDA norm2 over the last dim: y = sqrt(sum_c x[c]^2) (torch.linalg.vector_norm), accumulated in
// f32. Kernels and launch shapes: kernels/cuda/row_reduce.cuh (warp or block per row, split rows).
#include "kernels/cuda/row_reduce.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct Norm2Reducer {
  __device__ float pad() const { return 0.f; }
  __device__ float identity() const { return 0.f; }
  __device__ float pre(float x) const { return x * x; }
  __device__ float combine(float a, float b) const { return a + b; }
  __device__ float finish(float acc, int64_t /*cols*/) const { return sqrtf(acc); }
};

DNNB_REGISTER(register_row_reduce("norm2", Norm2Reducer{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
