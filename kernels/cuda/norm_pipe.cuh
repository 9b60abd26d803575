// The persistent prefetching layernorm / rmsnorm kernel (norm_rows.cuh takes it first for the
// rows it fits): the row pipeline of row_pipe.cuh with the statistics of norm_common.cuh.
#pragma once

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/norm_common.cuh"
#include "kernels/cuda/row_pipe.cuh"

namespace dnnb::cuda_kernels {

// f16/bf16 rows of 1025..8192 columns, x rows 16-byte aligned with cols % 8 == 0 (row_pipe.cuh
// has the pipeline and why): persistent blocks of cols / 16 threads (RowPipe16x2: blocks of up to
// 512, 2 per SM, 2 stages of 16 KB) that keep the next row of x in flight in shared memory while
// the current row is reduced and written. The row math is norm_packed_kernel's except each
// thread's sums, taken in four partial sums, so results differ from it within the rounding of an
// f32 sum. f32 rows take norm_packed_kernel, already at the copy rate.
// w + w_offset and b are converted to f32 once per block into shared memory (each thread its own
// vectors, read back by that thread: no barrier): with the row stages taking most of the SM's
// shared memory, the L1 left could not hold them, and re-reading them from L2 for every row would
// be as much L2 traffic as x itself; in registers (16 each per thread) they spill.
// Per SM: layernorm 2 x (32 KB + 64 KB of f32 w and b) = 192 KB, rmsnorm 2 x (32 KB + 32 KB) =
// 128 KB, one row per block ahead.
// The layernorm shift of each row (x[row, 0]) is loaded from global memory when the row's copies
// are issued, a row before it is used: another thread's copy into shared memory is not visible
// without a barrier, and the load hits the line the copies bring in.
inline constexpr int64_t kNormPipeMaxCols = kRowPipeMaxCols;
using NormPipeShape = RowPipe16x2;

// Dynamic shared memory of norm_pipe_kernel: the stages (`block` x kEpt elements each), then
// w + w_offset and b (layernorm) as f32 (`block` x kEpt floats each).
template <typename T, bool kLayerNorm, typename Shape>
inline int norm_pipe_smem_bytes(int block) {
  return (Shape::kStages * static_cast<int>(sizeof(T)) +
          (kLayerNorm ? 2 : 1) * static_cast<int>(sizeof(float))) *
         block * Shape::kEpt;
}

// kExact: the row is exactly blockDim.x * Shape::kEpt columns, so every vector of every thread is
// inside it: no bounds tests, no padding.
template <typename T, bool kLayerNorm, typename Shape, bool kExact = false>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks)
    norm_pipe_kernel(NormArgs<T> a) {
  static_assert(sizeof(T) == 2, "the pipe norm kernel holds 16-bit rows");
  constexpr int W = kVec<T>;
  constexpr int VPT = Shape::kEpt / W;
  constexpr int S = Shape::kStages;
  extern __shared__ float4 pipe_smem[];
  const int group = blockDim.x;  // one row per block at a time
  const int stage_elems = group * Shape::kEpt;
  T* const stages = reinterpret_cast<T*>(pipe_smem);
  // w + w_offset and b as f32, converted once per block. Float4 k of vector j of thread t at
  // [(j * kF4 + k) * group + t]: a warp's 16-byte reads are contiguous (no bank conflicts).
  constexpr int kF4 = W / 4;
  float4* const w_smem = reinterpret_cast<float4*>(stages + S * stage_elems);
  float4* const b_smem = w_smem + VPT * kF4 * group;  // layernorm only
  // Block reductions alternate buffers (layernorm: [0] the shifted sum, [1] and [2] the
  // deviation sums; rmsnorm: [0] or [1] by row parity), so no reduction overwrites a buffer a
  // slower warp still reads.
  __shared__ float scratch[3][32];
  const int t = threadIdx.x;
  const int cols = static_cast<int>(a.cols);  // <= kNormPipeMaxCols
  const int64_t step = gridDim.x;
  const float inv_cols = 1.f / static_cast<float>(cols);
  const auto inside = [&](int j) { return kExact || (j * group + t) * W < cols; };

  // Layernorm: the shifts of the rows whose copies are in flight, oldest first.
  float shifts[S - 1];
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {  // fill: this block's first S - 1 rows
    const int64_t r = blockIdx.x + s * step;
    const T* x_row = r < a.rows ? a.x.row(r) : nullptr;
    pipe_copy_row<T, VPT, kExact>(stages + s * stage_elems, x_row, t, group, cols);
    shifts[s] = x_row != nullptr ? row_shift<T, kLayerNorm>(x_row) : 0.f;
  }
#pragma unroll
  for (int j = 0; j < VPT; ++j) {  // this thread's w and b vectors, once (any layout of w, b)
    const int c = (j * group + t) * W;
    if (inside(j)) {
      float v[W];
      load_vec<T, int>(v, a.w, a.w.data, c, cols, 0.f);
#pragma unroll
      for (int k = 0; k < kF4; ++k)
        w_smem[(j * kF4 + k) * group + t] = make_float4(v[4 * k] + a.w_offset, v[4 * k + 1] + a.w_offset,
                                                        v[4 * k + 2] + a.w_offset, v[4 * k + 3] + a.w_offset);
      if constexpr (kLayerNorm) {
        load_vec<T, int>(v, a.b, a.b.data, c, cols, 0.f);
#pragma unroll
        for (int k = 0; k < kF4; ++k)
          b_smem[(j * kF4 + k) * group + t] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
      }
    }
  }

  int cur = 0;     // stage of `row`
  int parity = 0;  // rmsnorm's scratch buffer for this row
  for (int64_t row = blockIdx.x; row < a.rows; row += step) {
    const float shift = shifts[0];
#pragma unroll
    for (int s = 0; s + 1 < S - 1; ++s) shifts[s] = shifts[s + 1];
    const int64_t ahead = row + (S - 1) * step;
    const int fill = cur == 0 ? S - 1 : cur - 1;  // the stage the previous row used
    const T* ahead_row = ahead < a.rows ? a.x.row(ahead) : nullptr;
    pipe_copy_row<T, VPT, kExact>(stages + fill * stage_elems, ahead_row, t, group, cols);
    shifts[S - 2] = ahead_row != nullptr ? row_shift<T, kLayerNorm>(ahead_row) : 0.f;
    cp_async_wait<S - 1>();  // this thread's copies of `row` have landed
    const T* stage = stages + cur * stage_elems;

    // The row in f32, converted once; padding vectors read 0 (never summed: inside()).
    float v[VPT][W];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int c = (j * group + t) * W;
      if (inside(j)) {  // cols % W == 0: the vector is whole
        const Vec16<T> raw = *reinterpret_cast<const Vec16<T>*>(stage + c);
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = element_float(raw, k);
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = 0.f;
      }
    }

    // Sums in four partial sums added pairwise: shorter dependency chains than one running sum
    // (the rounding is no worse).
    float mean = 0.f;
    if constexpr (kLayerNorm) {
      float s4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < VPT; ++j)
        if (inside(j)) {  // cols % W == 0: a vector is all inside the row or all padding
#pragma unroll
          for (int k = 0; k < W; ++k) s4[k % 4] += v[j][k] - shift;
        }
      const float s = group_reduce((s4[0] + s4[1]) + (s4[2] + s4[3]), SumOp{}, 0.f, group, scratch[0]);
      mean = shift + s * inv_cols;
    }
    float q4[4] = {0.f, 0.f, 0.f, 0.f};
    float d4[4] = {0.f, 0.f, 0.f, 0.f};  // layernorm: sum of the deviations
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      if (inside(j)) {
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float d = v[j][k] - mean;
          q4[k % 4] += d * d;
          if constexpr (kLayerNorm) d4[k % 4] += d;
        }
      }
    }
    float q = (q4[0] + q4[1]) + (q4[2] + q4[3]);
    float dsum = (d4[0] + d4[1]) + (d4[2] + d4[3]);
    if constexpr (kLayerNorm)
      group_sum2(q, dsum, group, scratch[1], scratch[2]);
    else
      q = group_reduce(q, SumOp{}, 0.f, group, scratch[parity]);
    const NormStats st = norm_stats<kLayerNorm>(mean, q, dsum, inv_cols, a.eps);

    T* y_row = a.y.row(row);
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int c = (j * group + t) * W;
      if (inside(j)) {
        float w[W];
        float b[W];
#pragma unroll
        for (int k = 0; k < kF4; ++k) {
          const float4 w4 = w_smem[(j * kF4 + k) * group + t];
          w[4 * k] = w4.x;
          w[4 * k + 1] = w4.y;
          w[4 * k + 2] = w4.z;
          w[4 * k + 3] = w4.w;
          float4 b4 = make_float4(0.f, 0.f, 0.f, 0.f);  // rmsnorm: unused
          if constexpr (kLayerNorm) b4 = b_smem[(j * kF4 + k) * group + t];
          b[4 * k] = b4.x;
          b[4 * k + 1] = b4.y;
          b[4 * k + 2] = b4.z;
          b[4 * k + 3] = b4.w;
        }
        float o[W];
        // w already holds w + w_offset (the f32 sum normalize_vec would take: the same bits);
        // adding -0 changes no value (not even a zero's sign), so the compiler drops the add.
        normalize_vec<T, kLayerNorm>(o, v[j], w, b, st, -0.f);
        if constexpr (kExact) {  // whole aligned vectors (y rows checked by the launcher)
          Vec16<T> p;
#pragma unroll
          for (int k = 0; k < W; ++k) p.v[k] = from_float<T>(o[k]);
          store_vec16(y_row + c, p, a.stream_stores);
        } else {
          store_vec<T, int>(y_row, a.y, c, cols, o, a.stream_stores);
        }
      }
    }
    cur = next_stage<S>(cur);
    parity ^= 1;
  }
}

// Launches norm_pipe_kernel when `a` fits it (see there); false: nothing launched.
template <typename T, bool kLayerNorm>
Result<bool> try_launch_norm_pipe(const CudaDevice& device, const NormArgs<T>& a) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    using Shape = NormPipeShape;
    constexpr int W = kVec<T>;
    if (a.cols <= 32 * 32 || a.cols > kNormPipeMaxCols || a.cols % W != 0 || !a.x.vec)
      return false;
    const int block = static_cast<int>(round_up(ceil_div(a.cols, Shape::kEpt), 32));
    const int smem = norm_pipe_smem_bytes<T, kLayerNorm, Shape>(block);
    const int max_smem = norm_pipe_smem_bytes<T, kLayerNorm, Shape>(Shape::kThreads);
    // Exact rows with whole aligned vectors of y too: the kernel without bounds tests.
    if (a.cols == static_cast<int64_t>(block) * Shape::kEpt && a.y.vec)
      return launch_persistent_rows(device, norm_pipe_kernel<T, kLayerNorm, Shape, true>, block,
                                    smem, max_smem, a.rows, a);
    return launch_persistent_rows(device, norm_pipe_kernel<T, kLayerNorm, Shape>, block, smem,
                                  max_smem, a.rows, a);
  }
}

}  // namespace dnnb::cuda_kernels
