// What every layernorm / rmsnorm kernel shares (norm_rows.cuh, norm_pipe.cuh): the arguments,
// the row statistics and the one output expression, so that every kernel gives the same bits for
// the same sums.
//
// Layernorm statistics, the same arithmetic in every kernel (shifted data, then a corrected
// two-pass variance), over the row held in registers or shared memory:
//   pass 1: K = x[0], the row's first element; S = sum (x - K); m = K + S / N.
//   pass 2: d = x - m; D = sum d and Q = sum d^2 (one block reduction of the pair); c = D / N;
//           var = max(Q / N - c^2, 0).
//   output: y = fma(fma(x - m, rstd, -c rstd), w, b) = (x - m - c) rstd w + b,
//           rstd = 1 / sqrt(var + eps).
// Why: an f32 sum of N copies of one value is in general not N times it, so the plain mean of a
// constant row misses the value by some ulps, and with var ~ 0 the output scales that miss by
// 1 / sqrt(eps) (b + 7e-5 where torch gives b). With the shift a constant row is exact: S = 0,
// m = K, d = 0, D = Q = 0, y = b. For a row whose variance is far below its squared mean, x - m
// is exact (x and m within a factor of 2) and c removes what the rounding of S and m left, so
// the deviations keep their own precision instead of ulp(mean). A row whose first element is an
// outlier makes S a sum of large rounded differences; c corrects that too, and the deviations
// come from x itself, never from the rounded x - K. Cost: one subtraction per element in pass
// 1, one addition in pass 2; no extra pass over memory. rmsnorm sums squares: no cancellation.
#pragma once

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

template <typename T>
struct NormArgs {
  RowView<T> x;
  RowView<T> y;
  RowView<T> w;  // [cols], one row
  RowView<T> b;  // [cols], layernorm only
  int64_t rows = 0;
  int64_t cols = 0;
  float eps = 0.f;
  float w_offset = 0.f;
  int group = 32;        // threads per row (registers kernel)
  bool cache_x = false;  // long kernel: keep the row in shared memory between passes
  bool stream_stores = false;  // pipe kernel: y with streaming stores (store_vec16)
};

// What the output pass needs of a row's statistics. Layernorm: the normalised value is
// fma(x - mean, rstd, offset), offset = -c rstd (the file comment); rmsnorm: x rstd (mean and
// offset unused).
struct NormStats {
  float mean = 0.f;
  float rstd = 0.f;
  float offset = 0.f;
};

// The statistics from the pass-2 sums: q = sum d^2 (rmsnorm: sum x^2) and, for layernorm,
// dsum = sum d, over `cols` columns. IEEE square root and division, once per row.
template <bool kLayerNorm>
__device__ __forceinline__ NormStats norm_stats(float mean, float q, float dsum, float inv_cols,
                                                float eps) {
  NormStats st;
  st.mean = mean;
  if constexpr (kLayerNorm) {
    const float c = dsum * inv_cols;
    st.rstd = 1.f / sqrtf(fmaxf(fmaf(-c, c, q * inv_cols), 0.f) + eps);
    st.offset = -c * st.rstd;
  } else {
    st.rstd = 1.f / sqrtf(q * inv_cols + eps);
  }
  return st;
}

// Sums a and b over a group of `group` threads (one warp, or the whole block) as group_reduce
// does, with one barrier for both: every thread of the group gets both sums. sa and sb: 32
// floats of shared memory each that only this reduction call uses.
__device__ __forceinline__ void group_sum2(float& a, float& b, int group, float* sa, float* sb) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
  if (group <= 32) return;
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    sa[threadIdx.x >> 5] = a;
    sb[threadIdx.x >> 5] = b;
  }
  __syncthreads();
  a = lane < group / 32 ? sa[lane] : 0.f;
  b = lane < group / 32 ? sb[lane] : 0.f;
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
  }
}

// The normalised values of one vector (b unused for rmsnorm): the one expression every norm
// kernel uses, so they agree bit for bit.
template <typename T, bool kLayerNorm>
__device__ __forceinline__ void normalize_vec(float (&o)[kVec<T>], const float (&v)[kVec<T>],
                                              const float (&w)[kVec<T>],
                                              const float (&b)[kVec<T>], const NormStats& st,
                                              float w_offset) {
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) {
    if constexpr (kLayerNorm)
      o[k] = fmaf(fmaf(v[k] - st.mean, st.rstd, st.offset), w[k], b[k]);
    else
      o[k] = v[k] * st.rstd * (w[k] + w_offset);
  }
}

// y for the vector of columns [c, c + kVec) given the row statistics.
template <typename T, bool kLayerNorm, typename I>
__device__ __forceinline__ void store_normalized(T* y_row, const NormArgs<T>& a, I c, I cols,
                                                 const float (&v)[kVec<T>], const NormStats& st) {
  float w[kVec<T>];
  load_vec<T, I>(w, a.w, a.w.data, c, cols, 0.f);
  float b[kVec<T>];
  if constexpr (kLayerNorm) {
    load_vec<T, I>(b, a.b, a.b.data, c, cols, 0.f);
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) b[k] = 0.f;  // unused
  }
  float o[kVec<T>];
  normalize_vec<T, kLayerNorm>(o, v, w, b, st, a.w_offset);
  store_vec<T, I>(y_row, a.y, c, cols, o);
}

// The row's shift K (layernorm; 0 for rmsnorm, which has none): x[row, 0] in f32. Every thread
// loads it with its share of the row (the same line as the row's first vector: no DRAM read of
// its own).
template <typename T, bool kLayerNorm>
__device__ __forceinline__ float row_shift(const T* x_row) {
  if constexpr (kLayerNorm)
    return to_float(x_row[0]);
  else
    return 0.f;
}

}  // namespace dnnb::cuda_kernels
