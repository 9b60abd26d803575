// Row softmax, shared by softmax and cross_entropy_bwd (whose gradient is a softmax minus a
// one-hot, scaled):
//   z = scale * (softcap > 0 ? softcap * tanh(x / softcap) : x) + mask
//   p = exp(z - max z) / sum exp(z - max z), and p = 0 when every z is -inf
//   y = (p - [c == target]) * row_scale
// Softmax has no target and row_scale 1 (y = p exactly); cross-entropy backward has the row's
// target and row_scale = 1 / kept rows (0 on ignored rows).
//
// Kernels:
//  - registers (cols <= 16384): the row is read once into registers (EPT floats per thread: 8
//    or 32, 16-byte loads), then max, exp and sum run on registers and the row is written once.
//    Bytes: x (+ mask) read once, y written once: the minimum. Launch shape: register_rows_launch
//    (cuda_common.cuh). Rows of 1025..8192 columns take softmax_regs_occ_kernel in the default
//    plan (3 rows per SM; f16/bf16 with the 2-instruction exp): see SoftmaxPlan.
//  - long (cols > 16384; above 1024 for the "smem" variant; always for "two_pass"): one block
//    per row of about cols / 64 threads (32 to 512): rows up to 8K columns take 128 threads, so
//    several rows share an SM and their load, reduce and write phases overlap; long rows take
//    512 threads to keep 32 KB of loads in flight per SM. Pass 1 streams the row keeping online
//    statistics (running max m and sum s of exp(z - m), one rescale per 16-byte vector at most),
//    merged across the block; pass 2 writes y. When the row's z fit in shared memory (up to
//    kSoftmaxCacheBytes / 4 = 51200 columns) pass 1 keeps them there and pass 2 reads them back:
//    x read once, y written once. Longer rows, and two_pass, re-read x (and the mask) in pass 2.
//    Few long rows are split over several blocks: a stats launch writes (m, s) per chunk, a
//    write launch merges them (in a fixed order: deterministic) and writes its chunk (x read
//    twice; such problems are small enough to stay in L2).
//  - pipe (the default, rows of 1025..8192 columns): softmax_pipe_kernel, the registers
//    kernel's row math in persistent blocks that prefetch the next rows into shared memory
//    (row_pipe.cuh).
#pragma once
#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/row_pipe.cuh"
#include "kernels/cuda/softmax_plan.h"

namespace dnnb::cuda_kernels {

// Streaming kernel: 16 elements per thread per iteration (4 or 2 16-byte loads in flight).
template <typename T>
inline constexpr int kSoftmaxLongUnroll = 16 / kVec<T>;
inline constexpr int kSoftmaxLongThreads = 512;
inline constexpr int64_t kSoftmaxCacheBytes = 200 * 1024;  // of the H100/H200's 227 KB per block

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
  const int* kept_rows = nullptr;  // device count of rows whose target is not ignore_index
  // Or, the pipe kernel only (cross_entropy_bwd's default): the kernel counts the kept rows
  // itself, each block its own rows', and the blocks meet on these counters
  // (add_block_kept_rows, kept_rows_of_grid).
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
  // kept_rows is written by the kernel before this one (cross_entropy_bwd.cu), which the pipe
  // kernel overlaps (a programmatic dependent launch): wait for it, on every row, ignored ones
  // too, so no block finishes before that kernel has. Returns at once once it has completed.
  wait_for_prior_grid();
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

// cross_entropy_bwd in the pipe kernel with a.grid (no count kernel before it): the block counts
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

// Register-resident rows: EPT elements per thread, `group` threads per row. The body is shared
// by softmax_regs_kernel and softmax_regs_occ_kernel, which differ in their launch bounds and
// in kFastExp: exp_shifted_16bit (cuda_common.cuh) instead of expf, only ever for f16/bf16.
template <typename T, int EPT, bool kFastExp = false>
__device__ __forceinline__ void softmax_regs_rows(const SoftmaxArgs<T>& a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit outputs only");
  constexpr int W = kVec<T>;
  constexpr int VPT = EPT / W;
  __shared__ float scratch[2][32];
  const int group = a.group;
  const int t = threadIdx.x % group;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= a.rows) return;  // whole spare warps of the last block (warp-per-row only)
  const T* x_row = a.x.row(row);
  const T* mask_row = a.mask.data != nullptr ? a.mask.row(row) : nullptr;
  const int cols = static_cast<int>(a.cols);  // <= kMaxRegisterCols: 32-bit column math

  float z[VPT][W];
#pragma unroll
  for (int j = 0; j < VPT; ++j)
    load_logits<T, int>(z[j], a, x_row, mask_row, (j * group + t) * W, cols);

  const float m = block_row_max(z, group, scratch[0]);
  const float shift = m == -INFINITY ? 0.f : m;  // fully masked row: every exp is 0

  const float shift_log2e = shift * kLog2e;  // kFastExp: one rounding shared by the row
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      if constexpr (kFastExp)
        z[j][k] = exp_shifted_16bit(z[j][k], shift_log2e);
      else
        z[j][k] = expf(z[j][k] - shift);
      s += z[j][k];
    }
  s = group_reduce(s, SumOp{}, 0.f, group, scratch[1]);
  const float inv_sum = s > 0.f ? 1.f / s : 0.f;

  const RowOutput out = row_output(a, row);
  const int target = out.target >= 0 && out.target < cols ? static_cast<int>(out.target) : -1;
  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int c = (j * group + t) * W;
    if (c < cols) store_probs<T, int>(y_row, a, target, out.scale, c, cols, z[j], inv_sum);
  }
}

template <typename T, int EPT>
__global__ void __launch_bounds__(kRegisterRowsMaxThreads<EPT>, 1)
    softmax_regs_kernel(SoftmaxArgs<T> a) {
  softmax_regs_rows<T, EPT>(a);
}

// The default for rows of 1025..8192 columns (32 per thread, a block of <= 256 threads per row;
// measured 2026-11-21 as the "occ" variant: f32 438 us against 550, bf16 292 against 384 at
// 16384 x 8192): the launch bound asks for 3 blocks per SM (<= 80 registers) where
// softmax_regs_kernel gets 2 (95 / 123 registers at 256 threads), so loads of some rows overlap
// the reductions, exps and writes of others. kFastExp (f16/bf16 in the default plan): the
// 2-instruction exp, since 16-bit rows are issue-bound (cuda_common.cuh, exp_shifted_16bit).
inline constexpr int kSoftmaxOccThreads = 256;
inline constexpr int kSoftmaxOccMinBlocks = 3;  // <= 80 registers; 4 (64) spills 60-100 bytes
inline constexpr int64_t kSoftmaxOccMaxCols = kSoftmaxOccThreads * 32;

template <typename T, bool kFastExp>
__global__ void __launch_bounds__(kSoftmaxOccThreads, kSoftmaxOccMinBlocks)
    softmax_regs_occ_kernel(SoftmaxArgs<T> a) {
  softmax_regs_rows<T, 32, kFastExp>(a);
}

// The default "pipe" plan (row_pipe.cuh has the pipeline and why): rows of 1025..8192 columns, x
// rows 16-byte aligned with cols % kVec == 0 (whole 16-byte copies), in persistent blocks of
// cols / 32 threads (<= 256) that keep the next kStages - 1 rows of x in flight in shared memory
// while the current row is reduced and written. The row math is softmax_regs_rows' except the
// order of each thread's sum (four partial sums, session 5) and, in 16 bits, one (max, sum)
// reduction (block_max_sum_log2), so results can differ from the register kernel's by a few f32
// roundings, far below the output's. The mask (any broadcast, may hold -inf) is read from
// global memory when the row is processed (it is usually a broadcast that stays in L1/L2);
// softcap, scale and cross_entropy_bwd's epilogue as in the default. Every other row shape falls
// back to the default plan (launch_softmax_rows).
// Shared memory (session 6, row_pipe.cuh): f32 softmax 4 stages x 32 KB (one block of 512 per
// SM: 3 rows = 96 KB ahead of the one being processed); f16/bf16 2 stages x 16 KB (2 blocks of
// 512: 2 rows = 32 KB ahead); cross_entropy_bwd f32 2 x 32 KB (3 blocks of 256), 16-bit 2 x 16 KB
// (4 blocks of 256).
// Launch shapes (row_pipe.cuh, RowPipeShape): the default takes 16 columns per thread in blocks
// of 512 for 16-bit softmax (measured 2026-11-21 as variant "pipe16": bf16 148 us against 159,
// f16 152 against 159), 32 columns and 4 blocks per SM for 16-bit cross_entropy_bwd ("pipe4": bf16
// 161 against 173), and 32 columns and 3 blocks for f32 (the variants were not faster there).
// Those are the H200's shapes; devices with slower DRAM (the H100) take pipe4 for 16-bit softmax
// and pipe32 for 16-bit cross_entropy_bwd (resolve_softmax_plan, softmax_plan.h, with the figures).
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

// Compile-time shapes of the row math (measured with Nsight Compute on the H200, 2026-11-21:
// the bf16 kernel issued 25 instructions per element and was issue-bound, 63% of issue slots
// busy at 77% of copy): kPlain (no mask, no softcap, scale > 0) drops the per-element softcap
// test and, for 16-bit rows, folds the scale into the exp's multiply-add (the max of scale * x
// is scale * max x when scale > 0); kTarget = false (softmax) writes e / sum with no one-hot
// compare and no row scale. Results of the plain 16-bit path differ from the default's in the
// exp's f32 argument (one rounding), far below the 16-bit output rounding.
// kExact: the row is exactly blockDim.x * Shape::kEpt columns (8192 at 16 or 32 per thread), so
// every vector of every thread is inside it and the bounds tests, the -inf padding and their
// branches go (Nsight Compute, session 5: 30 of the 357 instructions per thread and row; fewer
// instructions, yet slower for softmax: see try_launch_softmax_pipe).
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
    // The grid's count, while the first rows' copies are in flight. Waited for here, not at the
    // first row inside the loop as the count kernel's wait is: there the wait's code made the
    // bf16 32 x 4 kernel (the H200's default shape) spill 32 bytes to the stack in the row loop,
    // and the op took 156.6-156.9 us against 148.5 (H200, session 17, call 5).
    if (a.grid != nullptr) {
      add_block_kept_rows(a, kept_slots);
      inv_kept = 1.f / kept_rows_of_grid(a, kept_slots[0]);
    }
  }
  int cur = 0;     // stage of `row`
  int parity = 0;  // scratch slots of this row (16-bit)
  // cross_entropy_bwd: each row's target is loaded a row ahead, and 1 / kept once per block
  // after the wait for the count kernel (row_output's wait and two dependent loads on every row
  // were a latency chain per row that only other blocks' work could hide).
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
      // As row_output: kept_rows comes from the overlapped kernel. Waited for here, before the
      // first row's reductions: after them (just before the first store) the default (pipe4)
      // took 151.5-151.9 us against 148.3-148.4 (A/B, H200, session 15).
      if (row == blockIdx.x && a.grid == nullptr) {
        wait_for_prior_grid();
        inv_kept = 1.f / static_cast<float>(*a.kept_rows);
      }
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
      // row instead of two, and the exps no longer wait for the row max (Nsight Compute on the
      // H200, session 5: the two reductions' barriers and shuffles were the longest stalls).
      // The factor adds two roundings of 2^-24, far below the 16-bit output's.
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
  if constexpr (kTarget) {
    if (a.grid != nullptr) release_grid_counts(a);
  }
}

// Whether softmax_pipe_kernel takes rows of `a` (try_launch_softmax_pipe; cross_entropy_bwd asks
// before it chooses how to count the kept rows): 1025..kSoftmaxPipeMaxCols columns in whole
// 16-byte vectors.
template <typename T>
bool softmax_pipe_fits(const SoftmaxArgs<T>& a) {
  return a.cols > 32 * 32 && a.cols <= kSoftmaxPipeMaxCols && a.cols % kVec<T> == 0 && a.x.vec;
}

// Launches softmax_pipe_kernel when `a` fits it (see there); false: nothing launched.
template <typename T, typename Shape>
Result<bool> try_launch_softmax_pipe(const CudaDevice& device, const SoftmaxArgs<T>& a) {
  constexpr int S = Shape::kStages;
  if (!softmax_pipe_fits(a)) return false;
  const int block = static_cast<int>(round_up(ceil_div(a.cols, Shape::kEpt), 32));
  const int smem = S * block * Shape::kEpt * static_cast<int>(sizeof(T));
  const int max_smem = S * Shape::kThreads * Shape::kEpt * static_cast<int>(sizeof(T));
  // cross_entropy_bwd: overlap the kept-row count before it (row_output waits for it), so the
  // count and the launch gap hide behind the first rows' copies. Nsight Compute on the H200,
  // session 7: the bf16 kernel took 142.6 us of the op's 150. With the overlap (session 13,
  // 16384 x 8192 bf16): 149.4 and 148.8 us in two calls, against 150.2 in session 12.
  // With a.grid instead (the default since session 17), no count kernel: the blocks count and
  // wait for each other, so the launch is cooperative.
  const PersistentLaunch how = a.grid != nullptr        ? PersistentLaunch::cooperative
                               : a.kept_rows != nullptr ? PersistentLaunch::overlap_prior
                                                        : PersistentLaunch::plain;
  const auto launch = [&](auto kernel) {
    return launch_persistent_rows(device, kernel, block, smem, max_smem, a.rows, a, how);
  };
  constexpr bool kFast = sizeof(T) == 2;  // 16-bit: the 2-instruction exp, as the default
  // The softmax path stores whole vectors of y: its rows must be 16-byte aligned too.
  const bool target = a.target != nullptr || !a.y.vec;
  const bool plain = a.mask.data == nullptr && !(a.softcap > 0.f) && a.scale > 0.f && std::isfinite(a.scale);
  if (a.mask.data != nullptr)
    return target ? launch(softmax_pipe_kernel<T, Shape, true, kFast, false, true>)
                  : launch(softmax_pipe_kernel<T, Shape, true, kFast, false, false>);
  if (!plain)
    return target ? launch(softmax_pipe_kernel<T, Shape, false, kFast, false, true>)
                  : launch(softmax_pipe_kernel<T, Shape, false, kFast, false, false>);
  // Exact rows take the kernel without bounds tests for cross_entropy_bwd only: for softmax it
  // measured 6% slower (H200, session 5, 16384 x 8192 bf16 157 us against 147.5, f16 157
  // against 149; the same build with and without it), cross_entropy_bwd bf16 150.5 us with it;
  // session 15 (H200, two rounds): without it, pipe4 153.2-153.4 us against 148.1-148.5 and
  // pipe16 157.1-157.5 against 148.5.
  if (target && a.cols == static_cast<int64_t>(block) * Shape::kEpt)  // every vector inside
    return launch(softmax_pipe_kernel<T, Shape, false, kFast, true, true, true>);
  return target ? launch(softmax_pipe_kernel<T, Shape, false, kFast, true, true>)
                : launch(softmax_pipe_kernel<T, Shape, false, kFast, true, false>);
}

enum SoftmaxPhase : int {
  kSoftmaxStats = 0,  // write (m, s) of this block's chunk to partials
  kSoftmaxWrite = 1,  // merge the row's partials, write this block's chunk
  kSoftmaxFused = 2,  // one block per row: stats, then write
};

// Streaming rows of any length: one block per (row, chunk). With cache_z (fused phase only),
// dynamic shared memory holds the chunk's z as floats (chunk * 4 bytes).
template <typename T>
__global__ void __launch_bounds__(kSoftmaxLongThreads, 1)
    softmax_long_kernel(SoftmaxArgs<T> a, int phase) {
  constexpr int W = kVec<T>;
  extern __shared__ float4 cached_z4[];
  float* cached_z = reinterpret_cast<float*>(cached_z4);
  __shared__ float scratch[2][32];
  const int64_t row = blockIdx.x / a.splits;
  const int64_t c0 = (blockIdx.x % a.splits) * a.chunk;
  const int64_t c1 = c0 + a.chunk < a.cols ? c0 + a.chunk : a.cols;
  const int n = blockDim.x;
  const int t = threadIdx.x;
  const int64_t step = static_cast<int64_t>(n) * W;
  const T* x_row = a.x.row(row);
  const T* mask_row = a.mask.data != nullptr ? a.mask.row(row) : nullptr;

  float m = -INFINITY;
  float s = 0.f;
  if (phase == kSoftmaxWrite) {
    for (int64_t i = t; i < a.splits; i += n) {
      const float2 p = a.partials[row * a.splits + i];
      merge_max_sum(m, s, p.x, p.y);
    }
  } else {
    for (int64_t c = c0 + static_cast<int64_t>(t) * W; c < c1; c += step * kSoftmaxLongUnroll<T>) {
      float z[kSoftmaxLongUnroll<T>][W];
#pragma unroll
      for (int u = 0; u < kSoftmaxLongUnroll<T>; ++u)
        load_logits<T, int64_t>(z[u], a, x_row, mask_row, c + u * step, c1);
#pragma unroll
      for (int u = 0; u < kSoftmaxLongUnroll<T>; ++u) {
        if (a.cache_z && c + u * step < c1) {  // 16-byte stores: conflict-free across the warp
#pragma unroll
          for (int k = 0; k < W; k += 4)
            *reinterpret_cast<float4*>(cached_z + (c + u * step - c0) + k) =
                make_float4(z[u][k], z[u][k + 1], z[u][k + 2], z[u][k + 3]);
        }
        float vm = z[u][0];  // one rescale per vector at most: the vector's max first
#pragma unroll
        for (int k = 1; k < W; ++k) vm = fmaxf(vm, z[u][k]);
        if (vm > m) {
          s *= expf(m - vm);  // m == -inf: exp(-inf) = 0 and s was 0
          m = vm;
        }
        if (m != -INFINITY) {
#pragma unroll
          for (int k = 0; k < W; ++k) s += expf(z[u][k] - m);
        }
      }
    }
  }
  // The block reduction's barrier also orders the cache stores before the reads below (each
  // thread reads back only what it wrote, but the barrier is there anyway).
  group_reduce_max_sum(m, s, n, scratch[0], scratch[1]);
  if (phase == kSoftmaxStats) {
    if (t == 0) a.partials[blockIdx.x] = make_float2(m, s);
    return;
  }

  const float shift = m == -INFINITY ? 0.f : m;
  const float inv_sum = s > 0.f ? 1.f / s : 0.f;
  const RowOutput out = row_output(a, row);
  T* y_row = a.y.row(row);
  for (int64_t c = c0 + static_cast<int64_t>(t) * W; c < c1; c += step * 2) {
    float z[2][W];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t cu = c + u * step;
      if (a.cache_z) {
        if (cu < c1) {
#pragma unroll
          for (int k = 0; k < W; k += 4) {
            const float4 q = *reinterpret_cast<const float4*>(cached_z + (cu - c0) + k);
            z[u][k] = q.x;
            z[u][k + 1] = q.y;
            z[u][k + 2] = q.z;
            z[u][k + 3] = q.w;
          }
        }
      } else {
        load_logits<T, int64_t>(z[u], a, x_row, mask_row, cu, c1);
      }
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t cu = c + u * step;
      if (cu < c1) {
#pragma unroll
        for (int k = 0; k < W; ++k) z[u][k] = expf(z[u][k] - shift);
        store_probs<T, int64_t>(y_row, a, out.target, out.scale, cu, c1, z[u], inv_sum);
      }
    }
  }
}

// Picks the kernel and launch shape for `a` (x, mask, y, rows, cols and the math fields set).
template <typename T>
Status launch_softmax_rows(const CudaDevice& device, SoftmaxArgs<T> a, SoftmaxPlan plan) {
  constexpr int W = kVec<T>;
  if (a.rows == 0 || a.cols == 0) return Status::ok();
  plan = resolve_softmax_plan(plan, sizeof(T), a.target != nullptr, device.dram_peak_bytes_per_s());
  // cross_entropy_bwd: the kept-row count comes from the count kernel (kept_rows), or, for the
  // pipe kernel only, from inside it (grid); anything else would read a null count.
  if (a.target != nullptr && (a.grid != nullptr ? !is_pipe_plan(plan) || !softmax_pipe_fits(a) : a.kept_rows == nullptr))
    return Status::error("cuda cross_entropy_bwd: no kept-row count for this kernel (internal)");
  if (is_pipe_plan(plan)) {
    auto launched = plan == SoftmaxPlan::pipe4      ? try_launch_softmax_pipe<T, RowPipe32x4>(device, a)
                    : plan == SoftmaxPlan::pipe16   ? try_launch_softmax_pipe<T, RowPipe16x2>(device, a)
                    : plan == SoftmaxPlan::pipe16s3 ? try_launch_softmax_pipe<T, RowPipe16x2s3>(device, a)
                    : plan == SoftmaxPlan::pipe16s4 ? try_launch_softmax_pipe<T, RowPipe16x2s4>(device, a)
                                                    : try_launch_softmax_pipe<T, RowPipe32x3>(device, a);
    if (!launched) return launched.status();
    if (*launched) return Status::ok();
    if (a.grid != nullptr)  // the other kernels read kept_rows (row_output)
      return Status::error("cuda cross_entropy_bwd: the grid-count pipe kernel did not launch (no block fits)");
    plan = SoftmaxPlan::occ;
  }
  const int64_t want_blocks = 2LL * device.sm_count();
  if ((plan == SoftmaxPlan::occ || plan == SoftmaxPlan::occ_expf) && a.cols > 32 * 32 &&
      a.cols <= kSoftmaxOccMaxCols) {
    if (a.rows > INT32_MAX) return Status::unsupported("too many rows for one launch");
    const int block = static_cast<int>(round_up(ceil_div(a.cols, 32), 32));
    a.group = block;
    if constexpr (sizeof(T) == 2) {
      if (plan == SoftmaxPlan::occ)
        softmax_regs_occ_kernel<T, true>
            <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
      else
        softmax_regs_occ_kernel<T, false>
            <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
    } else {  // f32: expf in both plans
      softmax_regs_occ_kernel<T, false>
          <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
    }
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  const int64_t max_register_cols = plan == SoftmaxPlan::smem       ? 32 * 32
                                    : plan == SoftmaxPlan::two_pass ? 0
                                                                    : kMaxRegisterCols;
  if (a.cols <= max_register_cols) {
    const RegisterRowsLaunch l = register_rows_launch(a.rows, a.cols, device.sm_count());
    if (l.grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
    a.group = l.group;
    if (l.ept == 8)
      softmax_regs_kernel<T, 8><<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    else
      softmax_regs_kernel<T, 32><<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }

  a.splits = 1;
  a.chunk = round_up(a.cols, W);
  if (a.rows < want_blocks && a.cols >= 16384) {
    const int64_t splits = std::min(ceil_div(want_blocks, a.rows), ceil_div(a.cols, 8192));
    a.chunk = round_up(ceil_div(a.cols, splits), W);
    a.splits = ceil_div(a.cols, a.chunk);
  }
  // About four iterations of the streaming loop per thread, at most kSoftmaxLongThreads.
  const int block = static_cast<int>(
      std::clamp<int64_t>(round_up(ceil_div(a.chunk, 16 * 4), 32), 32, kSoftmaxLongThreads));
  const int64_t grid = a.rows * a.splits;
  if (grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
  if (a.splits == 1) {
    const int64_t cache_bytes = a.chunk * static_cast<int64_t>(sizeof(float));
    a.cache_z = plan != SoftmaxPlan::two_pass && cache_bytes <= kSoftmaxCacheBytes;
    const int smem = a.cache_z ? static_cast<int>(cache_bytes) : 0;
    if (smem > 48 * 1024)  // beyond the default limit a kernel must opt in
      DNNB_CUDA_TRY(cudaFuncSetAttribute(softmax_long_kernel<T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    softmax_long_kernel<T>
        <<<static_cast<unsigned>(grid), block, smem, device.stream()>>>(a, kSoftmaxFused);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  auto scratch = StreamScratch::allocate(device, sizeof(float2) * a.rows * a.splits);
  if (!scratch) return scratch.status();
  a.partials = scratch->as<float2>();
  softmax_long_kernel<T>
      <<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a, kSoftmaxStats);
  DNNB_CUDA_CHECK_LAUNCH();
  softmax_long_kernel<T>
      <<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a, kSoftmaxWrite);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

}  // namespace dnnb::cuda_kernels
