// The pieces shared by the CUDA cross_entropy kernels (cross_entropy.cu) and their persistent
// pipelines (cross_entropy_pipe.cuh): the arguments, the online (max, sum of exp) statistics, the
// block sum of the loss and the kept-row count, and which shapes take a warp per row.
#pragma once
#include <cstdint>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

inline constexpr int kCeMeanThreads = 1024;

template <typename T>
struct CeArgs {
  RowView<T> x;
  const int64_t* target = nullptr;
  int64_t target_stride = 0;
  int64_t ignore_index = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t splits = 1;
  int64_t chunk = 0;           // columns per block, a multiple of kVec<T>
  float* row_loss = nullptr;   // [rows] when splits == 1
  float2* partials = nullptr;  // [rows * splits] when splits > 1; the pipe kernel: per warp
  unsigned* done = nullptr;    // the pipe kernel: blocks finished (grid_counters)
  T* loss = nullptr;           // the 0-d output
};

// Folds one vector into a running (max m, sum of exp(x - m) s): one rescale per vector at most.
// A running max that is still -inf (nothing but -inf so far) adds nothing to s, yet a NaN among
// the values must make the row's loss NaN, as torch's: the vector maxima propagate NaN
// (max_nan), and a NaN maximum with m == -inf marks s NaN (a rare path). With a finite m the NaN
// reaches s through its exp.
template <int W>
__device__ __forceinline__ void online_max_sum(const float (&v)[W], float& m, float& s) {
  float vm = v[0];
#pragma unroll
  for (int k = 1; k < W; ++k) vm = max_nan(vm, v[k]);
  if (vm > m) {
    s *= expf(m - vm);
    m = vm;
  }
  if (m != -INFINITY) {
#pragma unroll
    for (int k = 0; k < W; ++k) s += expf(v[k] - m);
  } else if (isnan(vm)) {
    s = NAN;
  }
}

// online_max_sum with the 2-instruction exp (exp_shifted_16bit, cuda_common.cuh) for bf16
// logits. s sums 2^(x log2e - ms) with ms = m log2e rounded once per running max (the rescale
// uses the same ms values, so s stays consistent with ms); online_fast_finish turns it into
// the sum of exp(x - m) that merge_max_sum and ce_row_loss expect.
template <int W>
__device__ __forceinline__ void online_max_sum_fast(const float (&v)[W], float& m, float& ms,
                                                    float& s) {
  float vm = v[0];
#pragma unroll
  for (int k = 1; k < W; ++k) vm = max_nan(vm, v[k]);
  if (vm > m) {
    const float vms = vm * kLog2e;
    s *= ex2_approx_ftz(ms - vms);  // ms == -inf (nothing yet): 0, and s was 0
    m = vm;
    ms = vms;
  }
  if (m != -INFINITY) {
#pragma unroll
    for (int k = 0; k < W; ++k) s += exp_shifted_16bit(v[k], ms);
  } else if (isnan(vm)) {
    s = NAN;
  }
}

// s * 2^(ms - m log2e): the rounding residual of ms put back (|residual| <= half an ulp of
// m log2e, computed exactly by the fma), so the loss keeps no |m| 2^-24 term from it.
__device__ __forceinline__ float online_fast_finish(float m, float ms, float s) {
  if (m == -INFINITY || !(s > 0.f)) return s;  // nothing seen (s == 0), or NaN / inf input
  return s * ex2_approx_ftz(-fmaf(m, kLog2e, -ms));
}

__device__ __forceinline__ int warp_sum_int(int v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The block sum of one float and one int (exact: counts reduce as ints) through two 32-slot
// scratch arrays; thread 0 gets both totals. Shared by ce_mean_kernel and ce_pipe_mean.
__device__ __forceinline__ void block_sum_float_int(float& sum, int& count,
                                                    float (&scratch)[2][32]) {
  const int lane = threadIdx.x & 31;
  sum = group_reduce(sum, SumOp{}, 0.f, blockDim.x, scratch[0]);
  count = warp_sum_int(count);
  int* count_scratch = reinterpret_cast<int*>(scratch[1]);
  if (lane == 0) count_scratch[threadIdx.x >> 5] = count;
  __syncthreads();
  count = warp_sum_int(lane < static_cast<int>(blockDim.x / 32) ? count_scratch[lane] : 0);
}


// Rows the warp kernels take: enough of them to fill the GPU with warps (a few per SM) and not
// so long that one warp's serial walk dominates (the split path handles few long rows).
inline bool ce_use_warp_rows(const CudaDevice& device, int64_t rows, int64_t cols) {
  return rows >= 8LL * device.sm_count() && cols <= 65536;
}

}  // namespace dnnb::cuda_kernels
