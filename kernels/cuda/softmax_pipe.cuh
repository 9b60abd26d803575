// The persistent prefetching row softmax kernel of softmax and cross_entropy_bwd
// (softmax_rows.cuh takes it first for the rows it fits), with cross_entropy_bwd's kept-row
// count made inside it.
#pragma once
#include <cmath>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/row_pipe.cuh"
#include "kernels/cuda/softmax_common.cuh"
#include "kernels/cuda/softmax_plan.h"

namespace dnnb::cuda_kernels {

// cross_entropy_bwd in the pipe kernel (no count kernel before it): the block counts
// the kept rows among its own (blockIdx.x, + gridDim.x, ...), while its first rows' copies are in
// flight, and adds the count and its arrival to a.grid in one 64-bit atomic.
template <typename T>
__device__ __forceinline__ void add_block_kept_rows(const SoftmaxArgs<T>& a, unsigned (&slots)[32]) {
  unsigned n = 0;
  for (int64_t r = blockIdx.x + static_cast<int64_t>(threadIdx.x) * gridDim.x; r < a.rows;
       r += static_cast<int64_t>(blockDim.x) * gridDim.x)
    n += a.target[r * a.target_stride] != a.ignore_index;
  n = __reduce_add_sync(0xffffffffu, n);
  if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = n;
  __syncthreads();
  if (threadIdx.x >= 32) return;
  n = threadIdx.x < blockDim.x / 32 ? slots[threadIdx.x] : 0u;
  n = __reduce_add_sync(0xffffffffu, n);
  if (threadIdx.x == 0) atomicAdd(&a.grid->cross_entropy_bwd_kept, (1ull << kGridArrivalShift) | n);
}

// The grid's kept rows, once every block has added its count (the launch is cooperative, so every
// block is resident and arrives); thread 0 waits and shares the count through `shared`.
template <typename T>
__device__ __forceinline__ float kept_rows_of_grid(const SoftmaxArgs<T>& a, unsigned& shared) {
  if (threadIdx.x == 0) {
    unsigned long long v;
    while (true) {
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(&a.grid->cross_entropy_bwd_kept) : "memory");
      if ((v >> kGridArrivalShift) >= gridDim.x) break;
      __nanosleep(32);
    }
    shared = static_cast<unsigned>(v & ((1ull << kGridArrivalShift) - 1));
  }
  __syncthreads();
  return static_cast<float>(shared);
}

// After the block's last row: the last block to finish puts a.grid's fields back to 0 for the
// next launch (every block has read the count by then: each reads it before its first store).
template <typename T>
__device__ __forceinline__ void release_grid_counts(const SoftmaxArgs<T>& a) {
  if (threadIdx.x != 0) return;
  if (atomicAdd(&a.grid->cross_entropy_bwd_done, 1u) == gridDim.x - 1) {
    a.grid->cross_entropy_bwd_kept = 0;
    a.grid->cross_entropy_bwd_done = 0;
  }
}

// The pipe kernel (row_pipe.cuh has the pipeline and why): rows of 1025..8192 columns, x rows
// 16-byte aligned with cols % kVec == 0 (whole 16-byte copies), in persistent blocks of
// cols / kEpt threads that keep the next kStages - 1 rows of x in flight in shared memory while
// the current row is reduced and written. The row math is softmax_regs_rows' except the order of
// each thread's sum (four partial sums) and, in 16 bits, one (max, sum) reduction
// (block_max_sum_log2), so results can differ from the register kernel's by a few f32 roundings,
// far below the output's. The mask (any broadcast, may hold -inf) is read from global memory
// when the row is processed (it is usually a broadcast that stays in L1/L2). Launch shapes by
// dtype, op and device: softmax_plan.h. Shared memory: f32 softmax 4 stages x 32 KB (one block of
// 512 per SM: 3 rows = 96 KB ahead of the one being processed); f16/bf16 2 stages x 16 KB (2
// blocks of 512, or 4 of 256); cross_entropy_bwd f32 2 x 32 KB (3 blocks of 256).
inline constexpr int64_t kSoftmaxPipeMaxCols = kRowPipeMaxCols;

// s * 2^((m - to) * c), the rescale of a partial sum taken relative to max m onto max to >= m;
// 0 when m is -inf (an empty or fully masked part: s is 0 and m - to would be NaN).
__device__ __forceinline__ float rescale_sum_log2(float s, float m, float to, float c) {
  return m == -INFINITY ? 0.f : s * ex2_approx_ftz((m - to) * c);
}

// One block reduction of per-thread (m, s) pairs, s = sum of 2^((z - m) * c) over the thread's
// z: the row max M and S = sum of 2^((z - M) * c). Max first, then the sums rescaled to it, per
// warp and then across warps: the same shuffle count as a max and a sum reduced apart, but one
// barrier. scratch holds (max, sum) slots of one row; the caller alternates two by row parity:
// a warp can only write row r + 2's slots after row r + 1's barrier, which every warp reaches
// after reading row r's.
__device__ __forceinline__ float2 block_max_sum_log2(float m, float s, float c, int group,
                                                     float (&scratch)[2][32]) {
  const float mw = warp_reduce(m, MaxOp{});
  const float sw = warp_reduce(rescale_sum_log2(s, m, mw, c), SumOp{});
  if (group <= 32) return make_float2(mw, sw);
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    scratch[0][threadIdx.x >> 5] = mw;
    scratch[1][threadIdx.x >> 5] = sw;
  }
  __syncthreads();
  const bool mine = lane < group / 32;
  const float m2 = mine ? scratch[0][lane] : -INFINITY;
  const float s2 = mine ? scratch[1][lane] : 0.f;
  const float row_max = warp_reduce(m2, MaxOp{});
  return make_float2(row_max, warp_reduce(rescale_sum_log2(s2, m2, row_max, c), SumOp{}));
}

// Compile-time shapes of the row math (the 16-bit kernel is issue-bound: every instruction per
// element counts): kPlain (no mask, no softcap, scale > 0) drops the per-element softcap test
// and, for 16-bit rows, folds the scale into the exp's multiply-add (the max of scale * x is
// scale * max x when scale > 0); kTarget = false (softmax) writes e / sum with no one-hot compare
// and no row scale. Results of the plain 16-bit path differ from the general path's in the exp's
// f32 argument (one rounding), far below the 16-bit output rounding.
// kExact: the row is exactly blockDim.x * Shape::kEpt columns (8192 at 16 or 32 per thread), so
// every vector of every thread is inside it and the bounds tests, the -inf padding and their
// branches go (30 of the ~360 instructions per thread and row). Taken for cross_entropy_bwd
// only: for softmax it is slower (try_launch_softmax_pipe).
// kTarget (cross_entropy_bwd) needs a.grid: the kernel counts the kept rows (add_block_kept_rows).
template <typename T, typename Shape, bool kHasMask, bool kFastExp, bool kPlain, bool kTarget,
          bool kExact = false>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks)
    softmax_pipe_kernel(SoftmaxArgs<T> a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit outputs only");
  static_assert(!(kPlain && kHasMask), "the plain path has no mask");
  static_assert(!kExact || kPlain, "only the plain path has an exact-row form");
  constexpr int W = kVec<T>;
  constexpr int VPT = Shape::kEpt / W;
  constexpr int S = Shape::kStages;
  extern __shared__ float4 pipe_smem[];
  T* const stages = reinterpret_cast<T*>(pipe_smem);
  // Reduction slots [row parity][max, sum][warp]. 16-bit rows alternate the two parities (one
  // (max, sum) reduction per row, block_max_sum_log2); f32 rows use parity 0 only, max then sum
  // in different buffers, which is safe across rows (each row's second reduction separates them).
  __shared__ float scratch[2][2][32];
  const int group = blockDim.x;     // one row per block at a time
  const int t = threadIdx.x;
  const int cols = static_cast<int>(a.cols);  // <= kSoftmaxPipeMaxCols
  const int stage_elems = group * Shape::kEpt;
  const int64_t step = gridDim.x;

#pragma unroll
  for (int s = 0; s < S - 1; ++s) {  // fill: this block's first S - 1 rows
    const int64_t r = blockIdx.x + s * step;
    pipe_copy_row<T, VPT, kExact>(stages + s * stage_elems, r < a.rows ? a.x.row(r) : nullptr, t,
                                  group, cols);
  }
  __shared__ unsigned kept_slots[32];
  float inv_kept = 0.f;
  if constexpr (kTarget) {
    // The grid's count, while the first rows' copies are in flight. Waited for here, before the
    // row loop: the wait's code inside the loop makes the 32 x 4 shape spill (64 registers).
    add_block_kept_rows(a, kept_slots);
    inv_kept = 1.f / kept_rows_of_grid(a, kept_slots[0]);
  }
  int cur = 0;     // stage of `row`
  int parity = 0;  // scratch slots of this row (16-bit)
  // cross_entropy_bwd: each row's target is loaded a row ahead (a dependent load at the row's
  // start is a latency per row that only other blocks' work could hide).
  int64_t t_next = kTarget && blockIdx.x < a.rows ? a.target[blockIdx.x * a.target_stride] : -1;
  for (int64_t row = blockIdx.x; row < a.rows; row += step) {
    const int64_t ahead = row + (S - 1) * step;
    const int fill = cur == 0 ? S - 1 : cur - 1;  // the stage the previous row used
    pipe_copy_row<T, VPT, kExact>(stages + fill * stage_elems,
                                  ahead < a.rows ? a.x.row(ahead) : nullptr, t, group, cols);
    RowOutput out{-1, 1.f};
    if constexpr (kTarget) {
      const int64_t target_row = t_next;
      if (row + step < a.rows) t_next = a.target[(row + step) * a.target_stride];
      out = target_row == a.ignore_index ? RowOutput{-1, 0.f} : RowOutput{target_row, inv_kept};
    }
    const T* mask_row = kHasMask ? a.mask.row(row) : nullptr;
    cp_async_wait<S - 1>();  // this thread's copies of `row` have landed
    const T* stage = stages + cur * stage_elems;

    float z[VPT][W];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int c = (j * group + t) * W;
      if (kExact || c < cols) {  // cols % W == 0: the vector is whole
        const Vec16<T> p = *reinterpret_cast<const Vec16<T>*>(stage + c);
        float add[W];
        if constexpr (kHasMask) {
          load_vec<T, int>(add, a.mask, mask_row, c, cols, 0.f);
        } else {
#pragma unroll
          for (int k = 0; k < W; ++k) add[k] = 0.f;
        }
#pragma unroll
        for (int k = 0; k < W; ++k) {
          float v = element_float(p, k);
          if constexpr (kPlain && kFastExp) {
            z[j][k] = v;  // scaled inside the exp below
          } else if constexpr (kPlain) {
            z[j][k] = a.scale * v;
          } else {
            if (a.softcap > 0.f) v = a.softcap * tanhf(v * a.inv_softcap);
            z[j][k] = fmaf(a.scale, v, add[k]);  // as load_logits: a -inf mask entry gives -inf
          }
        }
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) z[j][k] = -INFINITY;
      }
    }

    // Plain 16-bit: exp(scale * (x - max x)) = 2^(x * c - max x * c), c = scale * log2(e).
    const float exp_mul = kPlain && kFastExp ? a.scale * kLog2e : kLog2e;
    // Four partial sums, added pairwise: a chain of 16-32 dependent adds per thread was, with
    // the max's, the longest wait of the 16-bit kernel; the rounding is no worse than the chain's.
    float s4[4] = {0.f, 0.f, 0.f, 0.f};
    float inv_sum;  // what each exp of this thread is multiplied by
    if constexpr (kFastExp) {
      // 16-bit: each thread takes its exps against its own max, and one block reduction of
      // (max, sum) pairs (block_max_sum_log2) gives the row's; the thread's factor
      // 2^((m_t - M) c) / S then turns its exps into the row's probabilities. One barrier per
      // row instead of two, and the exps do not wait for the row max (the two reductions'
      // barriers and shuffles are the longest stalls otherwise). The factor adds two roundings
      // of 2^-24, far below the 16-bit output's.
      const float m_t = thread_max(z);
      const float shift_log2 = (m_t == -INFINITY ? 0.f : m_t) * exp_mul;  // masked part: exps 0
#pragma unroll
      for (int j = 0; j < VPT; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          z[j][k] = ex2_approx_ftz(fmaf(z[j][k], exp_mul, -shift_log2));
          s4[k % 4] += z[j][k];
        }
      const float2 row = block_max_sum_log2(m_t, (s4[0] + s4[1]) + (s4[2] + s4[3]), exp_mul, group,
                                            scratch[parity]);
      const float row_inv_sum = row.y > 0.f ? 1.f / row.y : 0.f;  // fully masked row: 0
      inv_sum = rescale_sum_log2(row_inv_sum, m_t, row.x, exp_mul);
      parity ^= 1;
    } else {
      const float m = block_row_max(z, group, scratch[0][0]);
      const float shift = m == -INFINITY ? 0.f : m;  // fully masked row: every exp is 0
#pragma unroll
      for (int j = 0; j < VPT; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          z[j][k] = expf(z[j][k] - shift);
          s4[k % 4] += z[j][k];
        }
      const float s = group_reduce((s4[0] + s4[1]) + (s4[2] + s4[3]), SumOp{}, 0.f, group, scratch[0][1]);
      inv_sum = s > 0.f ? 1.f / s : 0.f;
    }

    T* y_row = a.y.row(row);
    if constexpr (kTarget) {
      // (p - [c == target]) * scale as store_probs, with the one-hot compare once per vector;
      // p * scale elsewhere as e * (inv_sum * scale): one multiply per element, not two (the
      // 16-bit kernel is issue-bound); two f32 roundings either way, far below the output's.
      const int target = out.target >= 0 && out.target < cols ? static_cast<int>(out.target) : -1;
      const float prob_scale = inv_sum * out.scale;
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const int c = (j * group + t) * W;
        if (kExact || c < cols) {
          float o[W];
#pragma unroll
          for (int k = 0; k < W; ++k) o[k] = z[j][k] * prob_scale;
          if (static_cast<unsigned>(target - c) < static_cast<unsigned>(W)) {
#pragma unroll
            for (int k = 0; k < W; ++k)
              if (c + k == target) o[k] = (z[j][k] * inv_sum - 1.f) * out.scale;
          }
          store_vec<T, int>(y_row, a.y, c, cols, o);
        }
      }
    } else {  // softmax: y = e / sum, whole 16-byte vectors (cols % W == 0, rows aligned)
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const int c = (j * group + t) * W;
        if (kExact || c < cols) {
          Vec16<T> o;
#pragma unroll
          for (int k = 0; k < W; ++k) o.v[k] = from_float<T>(z[j][k] * inv_sum);
          *reinterpret_cast<Vec16<T>*>(y_row + c) = o;
        }
      }
    }
    cur = next_stage<S>(cur);
  }
  if constexpr (kTarget) release_grid_counts(a);
}

// Whether softmax_pipe_kernel takes rows of `a` (try_launch_softmax_pipe; cross_entropy_bwd asks
// before it chooses how to count the kept rows): 1025..kSoftmaxPipeMaxCols columns in whole
// 16-byte vectors of x; for softmax, whose kernel stores whole 16-byte vectors, of y too.
template <typename T>
bool softmax_pipe_fits(const SoftmaxArgs<T>& a) {
  return a.cols > 32 * 32 && a.cols <= kSoftmaxPipeMaxCols && a.cols % kVec<T> == 0 && a.x.vec &&
         (a.target != nullptr || a.y.vec);
}

// Launches softmax_pipe_kernel when `a` fits it (see there); false: nothing launched.
template <typename T, typename Shape>
Result<bool> try_launch_softmax_pipe(const CudaDevice& device, const SoftmaxArgs<T>& a) {
  constexpr int S = Shape::kStages;
  if (!softmax_pipe_fits(a)) return false;
  const int block = static_cast<int>(round_up(ceil_div(a.cols, Shape::kEpt), 32));
  const int smem = S * block * Shape::kEpt * static_cast<int>(sizeof(T));
  const int max_smem = S * Shape::kThreads * Shape::kEpt * static_cast<int>(sizeof(T));
  // cross_entropy_bwd: the blocks wait for each other's kept-row counts, so every block must be
  // resident at once: a cooperative launch.
  const PersistentLaunch how =
      a.target != nullptr ? PersistentLaunch::cooperative : PersistentLaunch::plain;
  const auto launch = [&](auto kernel) {
    return launch_persistent_rows(device, kernel, block, smem, max_smem, a.rows, a, how);
  };
  constexpr bool kFast = sizeof(T) == 2;  // 16-bit: the 2-instruction exp
  const bool target = a.target != nullptr;
  const bool plain = a.mask.data == nullptr && !(a.softcap > 0.f) && a.scale > 0.f && std::isfinite(a.scale);
  if (a.mask.data != nullptr)
    return target ? launch(softmax_pipe_kernel<T, Shape, true, kFast, false, true>)
                  : launch(softmax_pipe_kernel<T, Shape, true, kFast, false, false>);
  if (!plain)
    return target ? launch(softmax_pipe_kernel<T, Shape, false, kFast, false, true>)
                  : launch(softmax_pipe_kernel<T, Shape, false, kFast, false, false>);
  // Exact rows take the kernel without bounds tests for cross_entropy_bwd only: it makes
  // cross_entropy_bwd 3-6% faster and softmax 6% slower (bf16, 16384 x 8192, on the H200).
  if (target && a.cols == static_cast<int64_t>(block) * Shape::kEpt)  // every vector inside
    return launch(softmax_pipe_kernel<T, Shape, false, kFast, true, true, true>);
  return target ? launch(softmax_pipe_kernel<T, Shape, false, kFast, true, true>)
                : launch(softmax_pipe_kernel<T, Shape, false, kFast, true, false>);
}

// Launches the pipe kernel in the shape softmax_pipe_shape gives; false: nothing launched.
template <typename T>
Result<bool> try_launch_softmax_pipe_shape(const CudaDevice& device, const SoftmaxArgs<T>& a) {
  switch (softmax_pipe_shape(sizeof(T), a.target != nullptr, device.dram_peak_bytes_per_s())) {
    case SoftmaxPipeShape::cols16_blocks2:
      return try_launch_softmax_pipe<T, RowPipe16x2>(device, a);
    case SoftmaxPipeShape::cols16_blocks2_stages4:
      return try_launch_softmax_pipe<T, RowPipe16x2s4>(device, a);
    case SoftmaxPipeShape::cols32_blocks3:
      return try_launch_softmax_pipe<T, RowPipe32x3>(device, a);
    case SoftmaxPipeShape::cols32_blocks4:
      return try_launch_softmax_pipe<T, RowPipe32x4>(device, a);
  }
  return Status::error("cuda softmax: unknown pipe launch shape (internal)");
}

}  // namespace dnnb::cuda_kernels
