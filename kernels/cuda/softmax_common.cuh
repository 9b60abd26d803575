// Row softmax, shared by softmax and cross_entropy_bwd (whose gradient is a softmax minus a
// one-hot, scaled):
//   z = scale * (softcap > 0 ? softcap * tanh(x / softcap) : x) + mask
//   p = exp(z - max z) / sum exp(z - max z), and p = 0 when every z is -inf
//   y = (p - [c == target]) * row_scale
// Softmax has no target and row_scale 1 (y = p exactly); cross-entropy backward has the row's
// target and row_scale = 1 / kept rows (0 on ignored rows).
//
// This header: what the row kernels (softmax_rows.cuh) and the pipe kernel (softmax_pipe.cuh)
// share: the arguments, the logits, the one-hot epilogue, the row max.
#pragma once
#include <cmath>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

template <typename T>
struct SoftmaxArgs {
  RowView<T> x;
  RowView<T> mask;  // mask.data == nullptr: no mask
  RowView<T> y;
  int64_t rows = 0;
  int64_t cols = 0;
  float scale = 1.f;
  float softcap = 0.f;  // 0 = off
  float inv_softcap = 0.f;
  // cross_entropy_bwd only (target == nullptr for softmax)
  const int64_t* target = nullptr;
  int64_t target_stride = 0;
  int64_t ignore_index = 0;
  // The count of rows whose target is not ignore_index: for the pipe kernel the kernel counts
  // them itself, each block its own rows', and the blocks meet on `grid` (add_block_kept_rows,
  // kept_rows_of_grid); the other kernels read `kept_rows`, counted by a kernel before them
  // (cross_entropy_bwd.cu). Exactly one of the two is set.
  const int* kept_rows = nullptr;
  GridCounters* grid = nullptr;
  // launch shape
  int group = 32;              // threads per row (registers kernel)
  int64_t splits = 1;          // blocks per row (long kernel)
  int64_t chunk = 0;           // columns per block (long kernel), a multiple of kVec<T>
  bool cache_z = false;        // long kernel, fused: keep z in shared memory between the passes
  float2* partials = nullptr;  // (m, s) per row chunk when splits > 1
};

// z for the vector of columns [c, c + kVec) of one row; columns >= end are -inf.
template <typename T, typename I>
__device__ __forceinline__ void load_logits(float (&z)[kVec<T>], const SoftmaxArgs<T>& a,
                                            const T* x_row, const T* mask_row, I c, I end) {
  load_vec<T, I>(z, a.x, x_row, c, end, -INFINITY);
  float add[kVec<T>];
  if (mask_row != nullptr) {
    load_vec<T, I>(add, a.mask, mask_row, c, end, 0.f);
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) add[k] = 0.f;
  }
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) {
    if (c + k < end) {
      float t = z[k];
      if (a.softcap > 0.f) t = a.softcap * tanhf(t * a.inv_softcap);
      z[k] = fmaf(a.scale, t, add[k]);  // a -inf mask entry gives -inf
    }
  }
}

// The one-hot column and scale of a row's output (see the file comment).
struct RowOutput {
  int64_t target;
  float scale;
};

template <typename T>
__device__ __forceinline__ RowOutput row_output(const SoftmaxArgs<T>& a, int64_t row) {
  if (a.target == nullptr) return {-1, 1.f};
  const int64_t t = a.target[row * a.target_stride];
  if (t == a.ignore_index) return {-1, 0.f};
  return {t, 1.f / static_cast<float>(*a.kept_rows)};
}

template <typename T, typename I>
__device__ __forceinline__ void store_probs(T* y_row, const SoftmaxArgs<T>& a, I target,
                                            float scale, I c, I end, const float (&e)[kVec<T>],
                                            float inv_sum) {
  float o[kVec<T>];
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) o[k] = (e[k] * inv_sum - (c + k == target ? 1.f : 0.f)) * scale;
  store_vec<T, I>(y_row, a.y, c, end, o);
}

// The max of a thread's z, in four independent chains (max is exact, so any order gives the
// same value): one chain of 16-32 dependent FMNMX was the longest wait of the 16-bit pipe kernel.
template <int VPT, int W>
__device__ __forceinline__ float thread_max(const float (&z)[VPT][W]) {
  float m4[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) m4[k % 4] = fmaxf(m4[k % 4], z[j][k]);
  return fmaxf(fmaxf(m4[0], m4[1]), fmaxf(m4[2], m4[3]));
}

// The row's largest z over the block (group threads, VPT x W values each); -INFINITY when every z
// is -inf (a fully masked row). Shared by the register and pipe kernels.
template <int VPT, int W>
__device__ __forceinline__ float block_row_max(const float (&z)[VPT][W], int group, float* scratch) {
  return group_reduce(thread_max(z), MaxOp{}, -INFINITY, group, scratch);
}

}  // namespace dnnb::cuda_kernels
