// CUDA cross_entropy (forward): loss = mean over rows with target != ignore_index of
// logsumexp(logits[r]) - logits[r, target[r]]; every row ignored gives NaN (0/0), as torch.
// logits [N, C] f32 or bf16, target [N] i64, loss 0-d.
//
// Kernels (the default since 2026-11-21 is ce_stats_warp, measured at 16384 x 8192 as variant
// "warp": f32 146 us against 231 for ce_stats; bf16 183 against 180, now with the
// 2-instruction exp; ce_stats stays the path for few or very long rows and variant "block"):
//  - ce_stats_warp: a warp per row when there are many rows (ce_use_warp_rows), see below.
//  - ce_stats: one block per row (or per row chunk when few rows are long): a single streaming
//    pass over the logits with online statistics (running max m, sum s of exp(x - m), one
//    rescale per 16-byte vector at most), merged across the block. With one chunk per row the
//    block finishes the row: loss_r = m + log(s) - x[target] (0 when ignored) into scratch;
//    otherwise it writes (m, s) for its chunk. Bytes: the logits once (the minimum), 4-8 per row.
//    Expected ~85-90% of copy bandwidth for C >= 4K (bf16 is close to the exp throughput limit:
//    one expf per 2 bytes read).
//  - ce_stats_pipe (the default; the variant "pipe" until its H200 run): persistent warps with
//    the next chunk in flight, see there.
//  - ce_mean: one block sums the row losses in a fixed order (threads stride rows, then a
//    block tree) and counts kept rows: deterministic, no float atomics. With chunks it first
//    merges each row's (m, s) (a warp per row).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/row_pipe.cuh"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kCeUnroll = 4;
constexpr int kCeMeanThreads = 1024;

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
  unsigned* done = nullptr;    // the pipe kernel: blocks finished (grid_done_counter)
  T* loss = nullptr;           // the 0-d output
};

// Loss of one row from its statistics: 0 when ignored, NaN for a target outside [0, C) (torch
// raises there; NaN makes the bad input visible instead of reading out of bounds).
template <typename T>
__device__ float ce_row_loss(const CeArgs<T>& a, int64_t row, float m, float s) {
  const int64_t t = a.target[row * a.target_stride];
  if (t == a.ignore_index) return 0.f;
  if (t < 0 || t >= a.cols) return NAN;
  const float x_t = to_float(a.x.row(row)[t * a.x.ri.col_stride]);
  return (m + logf(s)) - x_t;
}

// Folds one vector into a running (max m, sum of exp(x - m) s): one rescale per vector at most.
template <int W>
__device__ __forceinline__ void online_max_sum(const float (&v)[W], float& m, float& s) {
  float vm = v[0];
#pragma unroll
  for (int k = 1; k < W; ++k) vm = fmaxf(vm, v[k]);
  if (vm > m) {
    s *= expf(m - vm);
    m = vm;
  }
  if (m != -INFINITY) {
#pragma unroll
    for (int k = 0; k < W; ++k) s += expf(v[k] - m);
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
  for (int k = 1; k < W; ++k) vm = fmaxf(vm, v[k]);
  if (vm > m) {
    const float vms = vm * kLog2e;
    s *= ex2_approx_ftz(ms - vms);  // ms == -inf (nothing yet): 0, and s was 0
    m = vm;
    ms = vms;
  }
  if (m != -INFINITY) {
#pragma unroll
    for (int k = 0; k < W; ++k) s += exp_shifted_16bit(v[k], ms);
  }
}

// s * 2^(ms - m log2e): the rounding residual of ms put back (|residual| <= half an ulp of
// m log2e, computed exactly by the fma), so the loss keeps no |m| 2^-24 term from it.
__device__ __forceinline__ float online_fast_finish(float m, float ms, float s) {
  if (m == -INFINITY || !(s > 0.f)) return s;  // nothing seen (s == 0), or NaN / inf input
  return s * ex2_approx_ftz(-fmaf(m, kLog2e, -ms));
}

template <typename T>
__global__ void __launch_bounds__(512) ce_stats_kernel(CeArgs<T> a) {
  constexpr int W = kVec<T>;
  __shared__ float scratch[2][32];
  const int64_t row = blockIdx.x / a.splits;
  const int64_t c0 = (blockIdx.x % a.splits) * a.chunk;
  const int64_t c1 = c0 + a.chunk < a.cols ? c0 + a.chunk : a.cols;
  const int64_t step = static_cast<int64_t>(blockDim.x) * W;
  const T* x_row = a.x.row(row);
  float m = -INFINITY;
  float s = 0.f;
  for (int64_t c = c0 + static_cast<int64_t>(threadIdx.x) * W; c < c1; c += step * kCeUnroll) {
    float v[kCeUnroll][W];
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) load_vec<T>(v[u], a.x, x_row, c + u * step, c1, -INFINITY);
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) online_max_sum(v[u], m, s);
  }
  group_reduce_max_sum(m, s, blockDim.x, scratch[0], scratch[1]);
  if (threadIdx.x != 0) return;
  if (a.splits == 1)
    a.row_loss[row] = ce_row_loss(a, row, m, s);
  else
    a.partials[blockIdx.x] = make_float2(m, s);
}

// Default (many rows): a warp per row streams it with kCeUnroll 16-byte vectors per lane in
// flight (2 KB per warp at f32), online (max, sum) per lane, a warp butterfly at the end: no
// block barrier and few registers, so 64 rows are in flight per SM where the block-per-row
// kernel keeps 2-4 (the diagnosis in docs/cuda.md). kFastExp == false: the same per-vector
// arithmetic as ce_stats_kernel; the merge order differs (last bits of the loss). kFastExp
// (bf16 in the default, "warp_expf" turns it off): online_max_sum_fast, as bf16 logits are
// issue-bound with expf (one expf per 2 bytes read).
template <typename T, bool kFastExp>
__global__ void __launch_bounds__(256) ce_stats_warp_kernel(CeArgs<T> a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit logits only");
  constexpr int W = kVec<T>;
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  if (row >= a.rows) return;  // whole warps leave together: rows are warp-uniform
  const int lane = threadIdx.x & 31;
  const int64_t step = 32 * W;
  const T* x_row = a.x.row(row);
  float m = -INFINITY;
  float ms = -INFINITY;  // kFastExp: m * log2e as used by the exps
  float s = 0.f;
  for (int64_t c = static_cast<int64_t>(lane) * W; c < a.cols; c += step * kCeUnroll) {
    float v[kCeUnroll][W];
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) load_vec<T>(v[u], a.x, x_row, c + u * step, a.cols, -INFINITY);
#pragma unroll
    for (int u = 0; u < kCeUnroll; ++u) {
      if constexpr (kFastExp)
        online_max_sum_fast(v[u], m, ms, s);
      else
        online_max_sum(v[u], m, s);
    }
  }
  if constexpr (kFastExp) s = online_fast_finish(m, ms, s);
  group_reduce_max_sum(m, s, 32, nullptr, nullptr);
  if (lane == 0) a.row_loss[row] = ce_row_loss(a, row, m, s);
}

// ---------------------------------------------------------------------------------------------
// The default (the variant "pipe" until its H200 run): ce_stats_pipe_kernel. Why ce_stats_warp is
// slow at 16384 x 8192 bf16 (127 us, 2.1 TB/s of a 4.54 TB/s read stream): each warp issues its 4
// loads per lane, waits a full DRAM latency, folds them, and only then issues the next 4; a warp
// has bytes in flight only part of the time, and every row start exposes a whole latency. This
// kernel software-pipelines the stream of each warp: while it folds chunk k (kCePipeVecs 16-byte
// vectors per lane: 4 KB per warp) the loads of chunk k + 1 are already issued, across row
// boundaries (persistent warps: rows warp, warp + warps, ...), and a row's target index is
// fetched a row ahead and its target logit at the row's first chunk, so the warp never waits on
// them. 16 warps per SM keep 64 KB of reads in flight at all times. Instructions per element
// (bf16, the budget at the read rate is ~14): the chunk's max is a tree of exact packed __hmax2
// over bf16x2 pairs (0.5 per element) with one rescale check per chunk (64 elements per lane)
// instead of per 8, then convert + fma + ex2 + add (4); one accumulator per vector position (8
// for bf16) keeps the add chains short. Fixed order: deterministic; the sum order differs from
// ce_stats_warp's (last bits of the loss). Taken when ce_use_warp_rows holds and the logits rows
// are 16-byte aligned with C % kVec == 0; other shapes run the "warp" plan.
constexpr int kCePipeVecs = 8;       // per lane per chunk: 128 bytes
constexpr int kCePipeWarps = 8;      // per block
constexpr int kCePipeMinBlocks = 2;  // <= 128 registers: two chunks (2 x 32) + the fold

// Chunk `it` of a row into registers: vector u of the lane at column (it*32*U + u*32 + lane) * W
// (each load instruction of the warp covers 512 contiguous bytes); columns past the row read -inf.
// The load goes through 32-bit words preset to -inf: a predicated 16-byte load into them. Filled
// element by element, bf16 padding became PRMT merges of the loaded registers, which made every
// chunk wait for its own loads right after issuing them (no overlap with the fold; measured
// 2026-11-21: 96 us at 16384 x 8192 bf16).
template <typename T>
__device__ __forceinline__ void ce_load_chunk(Vec16<T> (&buf)[kCePipeVecs], const T* x_row,
                                              int it, int lane, int cols) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16>, "f32 or bf16");
  constexpr int W = kVec<T>;
  constexpr uint32_t kNegInf = sizeof(T) == 4 ? 0xff800000u : 0xff80ff80u;  // -inf (x2 for bf16)
#pragma unroll
  for (int u = 0; u < kCePipeVecs; ++u) {
    const int c = ((it * kCePipeVecs + u) * 32 + lane) * W;
    uint4 bits = make_uint4(kNegInf, kNegInf, kNegInf, kNegInf);
    if (c < cols) bits = *reinterpret_cast<const uint4*>(x_row + c);  // cols % W == 0: whole
    memcpy(&buf[u], &bits, sizeof(bits));
  }
}

// p[0] = op over p[0..N) as a balanced tree (N a power of two): log2 N dependent steps, not N.
// A recursion on N, so every index is a compile-time constant and p stays in registers (a loop
// over halving widths is not unrolled by nvcc and puts p in local memory).
template <int N, typename V, typename Op>
__device__ __forceinline__ void tree_fold(V* p, Op op) {
  static_assert((N & (N - 1)) == 0, "N must be a power of two");
  if constexpr (N > 1) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) p[i] = op(p[i], p[i + N / 2]);
    tree_fold<N / 2>(p, op);
  }
}

// Elements 2i, 2i + 1 of a bf16 vector as one bf16x2 (the register that holds them).
__device__ __forceinline__ __nv_bfloat162 bf16_pair(const Vec16<__nv_bfloat16>& v, int i) {
  __nv_bfloat162 p;
  memcpy(&p, &v.v[2 * i], sizeof(p));
  return p;
}

// The largest element of a chunk: bf16 as a tree of packed (exact) __hmax2 over bf16x2 pairs,
// f32 as a tree of fmaxf. Like fmaxf, __hmax2 returns the other operand when one is NaN.
template <typename T>
__device__ __forceinline__ float ce_chunk_max(const Vec16<T> (&buf)[kCePipeVecs]) {
  constexpr int W = kVec<T>;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    // Level 1 pairs vector u with vector u + U/2 straight from the chunk's registers.
    constexpr int H = kCePipeVecs / 2;
    __nv_bfloat162 p[H * W / 2];
#pragma unroll
    for (int u = 0; u < H; ++u)
#pragma unroll
      for (int i = 0; i < W / 2; ++i)
        p[u * (W / 2) + i] = __hmax2(bf16_pair(buf[u], i), bf16_pair(buf[u + H], i));
    tree_fold<H * W / 2>(p, [](__nv_bfloat162 x, __nv_bfloat162 y) { return __hmax2(x, y); });
    return fmaxf(__low2float(p[0]), __high2float(p[0]));
  } else {
    constexpr int N = kCePipeVecs * W;
    float p[N];
#pragma unroll
    for (int u = 0; u < kCePipeVecs; ++u)
#pragma unroll
      for (int k = 0; k < W; ++k) p[u * W + k] = element_float(buf[u], k);
    tree_fold<N>(p, [](float x, float y) { return fmaxf(x, y); });
    return p[0];
  }
}

// Folds a chunk into the lane's running max m and the sums s[k] of exp(x - m) over the
// elements at position k of each vector: one rescale check per chunk, and kVec independent add
// chains of kCePipeVecs adds per chunk (one accumulator, or two, made the bf16 kernel
// latency-bound on the add chain: 96 us at 16384 x 8192 with two, measured 2026-11-21).
// kFastExp (bf16): 2^(x log2e - ms) with ms = m log2e rounded once per running max, as
// online_max_sum_fast; otherwise expf, as online_max_sum.
template <typename T, bool kFastExp>
__device__ __forceinline__ void ce_fold_chunk(const Vec16<T> (&buf)[kCePipeVecs], float& m,
                                              float& ms, float (&s)[kVec<T>]) {
  constexpr int W = kVec<T>;
  const float vm = ce_chunk_max(buf);
  if (vm > m) {
    float r;
    if constexpr (kFastExp) {
      const float vms = vm * kLog2e;
      r = ex2_approx_ftz(ms - vms);  // ms == -inf (nothing yet): 0, and every s[k] is 0
      ms = vms;
    } else {
      r = expf(m - vm);  // m == -inf: 0
    }
#pragma unroll
    for (int k = 0; k < W; ++k) s[k] *= r;
    m = vm;
  }
  if (m == -INFINITY) return;  // nothing but -inf so far (or only NaN): nothing to add
#pragma unroll
  for (int u = 0; u < kCePipeVecs; ++u)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float x = element_float(buf[u], k);
      if constexpr (kFastExp)
        s[k] += exp_shifted_16bit(x, ms);
      else
        s[k] += expf(x - m);
    }
}

// x[row, t] for the loss, or 0 when the row is ignored or t is outside [0, C) (the loss is then
// 0 or NaN without it: ce_pipe_row_loss).
template <typename T>
__device__ __forceinline__ float ce_target_logit(const CeArgs<T>& a, int64_t row, int64_t t) {
  if (t == a.ignore_index || t < 0 || t >= a.cols) return 0.f;
  return to_float(a.x.row(row)[t * a.x.ri.col_stride]);
}

// ce_row_loss with the target and its logit already loaded.
template <typename T>
__device__ __forceinline__ float ce_pipe_row_loss(const CeArgs<T>& a, int64_t t, float x_t,
                                                  float m, float s) {
  if (t == a.ignore_index) return 0.f;
  if (t < 0 || t >= a.cols) return NAN;
  return (m + logf(s)) - x_t;
}

// One warp's position in its row stream and the statistics of its current row.
template <typename T>
struct CePipeLane {
  int64_t row;       // the row of the chunk being folded
  int it;            // that chunk's index in the row
  int64_t tgt;       // the row's target (every lane: one broadcast load)
  int64_t tgt_next;  // the warp's next row's, loaded at this row's first chunk
  float x_t;         // the row's target logit, loaded at its first chunk
  float m;
  float ms;  // kFastExp: m * log2e as used by the exps
  float s[kVec<T>];  // per vector position: ce_fold_chunk
  float loss_sum;    // of the warp's finished rows, in row order (lane 0's is the one kept)
  int kept;          // of those rows, the ones not ignored
};

// Prefetches the chunk after (row, it) into nxt, then folds cur (which holds (row, it)); a
// finished row writes its loss. Returns whether the warp has a next chunk.
template <typename T, bool kFastExp>
__device__ __forceinline__ bool ce_pipe_step(const CeArgs<T>& a, CePipeLane<T>& p,
                                             const Vec16<T> (&cur)[kCePipeVecs],
                                             Vec16<T> (&nxt)[kCePipeVecs], int lane, int cols,
                                             int chunks, int64_t warps) {
  int64_t next_row = p.row;
  int next_it = p.it + 1;
  if (next_it == chunks) {
    next_row = p.row + warps;
    next_it = 0;
  }
  const bool more = next_row < a.rows;
  if (more) ce_load_chunk(nxt, a.x.row(next_row), next_it, lane, cols);
  if (p.it == 0) {  // both used a row later, so their latency hides behind the row's chunks
    p.x_t = ce_target_logit(a, p.row, p.tgt);  // p.tgt was loaded during the previous row
    if (p.row + warps < a.rows) p.tgt_next = a.target[(p.row + warps) * a.target_stride];
  }
  ce_fold_chunk<T, kFastExp>(cur, p.m, p.ms, p.s);
  if (next_it == 0) {  // p.row is complete
    float m = p.m;
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) s += p.s[k];  // fixed order
    if constexpr (kFastExp) s = online_fast_finish(m, p.ms, s);
    group_reduce_max_sum(m, s, 32, nullptr, nullptr);  // one warp: no shared memory used
    p.loss_sum += ce_pipe_row_loss(a, p.tgt, p.x_t, m, s);
    p.kept += p.tgt != a.ignore_index;
    p.m = -INFINITY;
    p.ms = -INFINITY;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) p.s[k] = 0.f;
    p.tgt = p.tgt_next;
  }
  p.row = next_row;
  p.it = next_it;
  return more;
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

// The mean of ce_stats_pipe_kernel without a second launch (that launch, ce_mean_kernel: 4.7 us
// of the 77 us of bf16 at 16384 x 8192, Nsight Compute on the H200, 2026-11-21, session 6).
// Every warp writes its (loss sum, kept rows) to a.partials[warp]; each block then counts
// itself done on a.done, and the block that finishes last sums the partials in warp order
// (deterministic for a given grid) and writes the loss. That block also puts the counter back
// to 0 for the next launch: the counter is the device's (grid_done_counter) and launches on the
// device's one stream are ordered, so no launch ever sees another's count.
template <typename T>
__device__ __forceinline__ void ce_pipe_mean(const CeArgs<T>& a, float loss_sum, int kept,
                                             int lane, int64_t warp) {
  __shared__ float scratch[2][32];
  __shared__ bool last;
  if (lane == 0) {
    a.partials[warp] = make_float2(loss_sum, __int_as_float(kept));
    __threadfence();  // the partial is visible device-wide before this block counts itself done
  }
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(a.done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();  // every other block's partials (fenced before their count) are visible
  const int warps = static_cast<int>(gridDim.x) * kCePipeWarps;
  float sum = 0.f;
  int count = 0;
  for (int i = threadIdx.x; i < warps; i += blockDim.x) {
    const float2 q = __ldcg(&a.partials[i]);  // from L2: never a stale L1 line
    sum += q.x;
    count += __float_as_int(q.y);
  }
  block_sum_float_int(sum, count, scratch);
  if (threadIdx.x == 0) {
    a.loss[0] = from_float<T>(sum / static_cast<float>(count));  // 0/0 = NaN: every row ignored
    *a.done = 0;
  }
}

template <typename T, bool kFastExp>
__global__ void __launch_bounds__(32 * kCePipeWarps, kCePipeMinBlocks)
    ce_stats_pipe_kernel(CeArgs<T> a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit logits only");
  constexpr int kChunkCols = 32 * kCePipeVecs * kVec<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kCePipeWarps;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kCePipeWarps + (threadIdx.x >> 5);
  const int cols = static_cast<int>(a.cols);  // <= 65536 (ce_use_warp_rows)
  const int chunks = (cols + kChunkCols - 1) / kChunkCols;

  CePipeLane<T> p{first, 0, 0, 0, 0.f, -INFINITY, -INFINITY, {}, 0.f, 0};
  if (first < a.rows) {  // warp-uniform; a warp without rows still reports (0, 0) below
    Vec16<T> buf0[kCePipeVecs];
    Vec16<T> buf1[kCePipeVecs];
    ce_load_chunk(buf0, a.x.row(first), 0, lane, cols);
    p.tgt = a.target[first * a.target_stride];
    // Two steps per iteration with the buffers swapped: no register copies between chunks.
    while (ce_pipe_step<T, kFastExp>(a, p, buf0, buf1, lane, cols, chunks, warps) &&
           ce_pipe_step<T, kFastExp>(a, p, buf1, buf0, lane, cols, chunks, warps)) {
    }
  }
  ce_pipe_mean(a, p.loss_sum, p.kept, lane, first);
}

template <typename T>
__global__ void __launch_bounds__(kCeMeanThreads) ce_mean_kernel(CeArgs<T> a) {
  __shared__ float scratch[2][32];
  const int lane = threadIdx.x & 31;
  float sum = 0.f;
  int kept = 0;
  if (a.splits == 1) {
#pragma unroll 4
    for (int64_t r = threadIdx.x; r < a.rows; r += kCeMeanThreads) {
      sum += a.row_loss[r];
      kept += a.target[r * a.target_stride] != a.ignore_index;
    }
  } else {
    for (int64_t r = threadIdx.x >> 5; r < a.rows; r += kCeMeanThreads / 32) {
      float m = -INFINITY;
      float s = 0.f;
      for (int64_t i = lane; i < a.splits; i += 32) {
        const float2 p = a.partials[r * a.splits + i];
        merge_max_sum(m, s, p.x, p.y);
      }
      group_reduce_max_sum(m, s, 32, nullptr, nullptr);  // one warp: no shared memory used
      if (lane == 0) {
        sum += ce_row_loss(a, r, m, s);
        kept += a.target[r * a.target_stride] != a.ignore_index;
      }
    }
  }
  block_sum_float_int(sum, kept, scratch);
  if (threadIdx.x == 0) a.loss[0] = from_float<T>(sum / static_cast<float>(kept));  // 0/0 = NaN
}

// Rows the warp kernel takes: enough of them to fill the GPU with warps (a few per SM) and not
// so long that one warp's serial walk dominates (the split path handles few long rows).
bool ce_use_warp_rows(const CudaDevice& device, int64_t rows, int64_t cols) {
  return rows >= 8LL * device.sm_count() && cols <= 65536;
}

// How rows are placed (the cross_entropy variants).
enum class CePlan {
  warp,       // "warp" (the default until 2026-11-21, session 3): ce_stats_warp_kernel for many
              // rows (bf16 with the 2-instruction exp), else ce_stats_kernel
  warp_expf,  // as warp with expf for bf16
  block,      // ce_stats_kernel for every shape (the default before 2026-11-21)
  pipe,       // the default ("" variant; measured 2026-11-21 as variant "pipe": bf16 79 us against
              // warp's 126, f32 136 against 145): ce_stats_pipe_kernel where it applies (see
              // there), else as warp
};

// Launches ce_stats_pipe_kernel and the mean when `a` fits it; false: nothing launched.
template <typename T>
Result<bool> try_launch_ce_pipe(const CudaDevice& device, CeArgs<T> a) {
  if (!ce_use_warp_rows(device, a.rows, a.cols) || a.cols == 0 || !a.x.vec ||
      a.cols % kVec<T> != 0)
    return false;
  constexpr bool kFast = sizeof(T) == 2;  // bf16: the 2-instruction exp, as the default
  const auto kernel = ce_stats_pipe_kernel<T, kFast>;
  constexpr int kBlock = 32 * kCePipeWarps;
  auto per_sm = pipe_blocks_per_sm(device, reinterpret_cast<const void*>(kernel), kBlock, 0, 0);
  if (!per_sm) return per_sm.status();
  if (*per_sm == 0) return false;
  const int64_t grid = std::min<int64_t>(ceil_div(a.rows, kCePipeWarps),
                                         static_cast<int64_t>(*per_sm) * device.sm_count());
  auto done = grid_done_counter(device);
  if (!done) return done.status();
  auto scratch = StreamScratch::allocate(device, sizeof(float2) * grid * kCePipeWarps);
  if (!scratch) return scratch.status();
  a.splits = 1;
  a.partials = scratch->as<float2>();
  a.done = *done;
  kernel<<<static_cast<unsigned>(grid), kBlock, 0, device.stream()>>>(a);  // and the mean
  DNNB_CUDA_CHECK_LAUNCH();
  DNNB_TRY(scratch->release());
  return true;
}

template <typename T>
Status launch_cross_entropy(const CudaDevice& device, CeArgs<T> a, CePlan plan) {
  constexpr int W = kVec<T>;
  if (plan == CePlan::pipe) {
    auto launched = try_launch_ce_pipe<T>(device, a);
    if (!launched) return launched.status();
    if (*launched) return Status::ok();
    plan = CePlan::warp;
  }
  const bool warp_rows = plan != CePlan::block;
  const bool fast_exp = plan == CePlan::warp;
  a.splits = 1;
  if (warp_rows && ce_use_warp_rows(device, a.rows, a.cols)) {
    auto scratch = StreamScratch::allocate(device, sizeof(float) * a.rows);
    if (!scratch) return scratch.status();
    a.row_loss = scratch->as<float>();
    constexpr int kWarpsPerBlock = 8;
    const unsigned grid = static_cast<unsigned>(ceil_div(a.rows, kWarpsPerBlock));
    if constexpr (sizeof(T) == 2) {
      if (fast_exp)
        ce_stats_warp_kernel<T, true><<<grid, 32 * kWarpsPerBlock, 0, device.stream()>>>(a);
      else
        ce_stats_warp_kernel<T, false><<<grid, 32 * kWarpsPerBlock, 0, device.stream()>>>(a);
    } else {  // f32: expf always
      ce_stats_warp_kernel<T, false><<<grid, 32 * kWarpsPerBlock, 0, device.stream()>>>(a);
    }
    DNNB_CUDA_CHECK_LAUNCH();
    ce_mean_kernel<T><<<1, kCeMeanThreads, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return scratch->release();
  }
  a.chunk = round_up(std::max<int64_t>(a.cols, 1), W);
  const int64_t want_blocks = 2LL * device.sm_count();
  if (a.rows < want_blocks && a.cols >= 16384) {
    const int64_t splits =
        std::min(ceil_div(want_blocks, std::max<int64_t>(a.rows, 1)), ceil_div(a.cols, 8192));
    a.chunk = round_up(ceil_div(a.cols, splits), W);
    a.splits = ceil_div(a.cols, a.chunk);
  }
  const int block = static_cast<int>(
      std::clamp<int64_t>(round_up(ceil_div(a.chunk, W * kCeUnroll), 32), 32, 512));
  const int64_t grid = a.rows * a.splits;
  if (grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
  auto scratch = StreamScratch::allocate(
      device, a.splits == 1 ? sizeof(float) * a.rows : sizeof(float2) * a.rows * a.splits);
  if (!scratch) return scratch.status();
  if (a.splits == 1)
    a.row_loss = scratch->as<float>();
  else
    a.partials = scratch->as<float2>();
  if (grid > 0) {
    ce_stats_kernel<T><<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
  }
  ce_mean_kernel<T><<<1, kCeMeanThreads, 0, device.stream()>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

Status run_cross_entropy(OpCall& call, CePlan plan) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto ignore_index = call.problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda cross_entropy: expected inputs logits, target and output loss");
  const Tensor& logits = call.inputs[0];
  const Tensor& target = call.inputs[1];
  const Tensor& loss = call.outputs[0];
  DNNB_TRY(expect_tensor(logits, call.problem.dtype, "logits"));
  DNNB_TRY(expect_tensor(target, DType::i64, "target"));
  DNNB_TRY(expect_tensor(loss, call.problem.dtype, "loss"));
  if (logits.ndim() != 2 || target.shape != Shape{logits.shape[0]} || loss.numel() != 1)
    return Status::bad_input("cuda cross_entropy: expected logits [N, C], target [N], loss []");
  return dispatch_float<false>(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    CeArgs<T> a;
    auto xv = make_row_view<T>(logits);
    if (!xv) return xv.status();
    a.x = *xv;
    a.target = data_ptr<int64_t>(target);
    a.target_stride = target.strides[0];
    a.ignore_index = *ignore_index;
    a.rows = logits.shape[0];
    a.cols = logits.shape[1];
    a.loss = data_ptr<T>(loss);
    return launch_cross_entropy<T>(**device, a, plan);
  });
}

Status check_cross_entropy(const Problem& problem) {
  auto ignore_index = problem.get_int("ignore_index", -100);
  return ignore_index ? Status::ok() : ignore_index.status();
}

bool register_cross_entropy(const char* variant, CePlan plan) {
  return register_cuda(
      "cross_entropy", variant, {DType::f32, DType::bf16},
      [plan](OpCall& call) { return run_cross_entropy(call, plan); }, check_cross_entropy);
}

// "": ce_stats_pipe_kernel (persistent warps, the next chunk in flight while folding the current
// one) for many aligned rows, other shapes as "warp" (the variant "pipe" until its H200 run).
// "warp": a warp per row when there are many rows (ce_use_warp_rows), bf16 with the
// 2-instruction exp; other shapes take the block kernel. "warp_expf": the same with expf for
// bf16 too (f32 is identical to "warp"). "block": the default before 2026-11-21 (block per row,
// expf).
DNNB_REGISTER(register_cross_entropy("", CePlan::pipe));
DNNB_REGISTER(register_cross_entropy("warp", CePlan::warp));
DNNB_REGISTER(register_cross_entropy("warp_expf", CePlan::warp_expf));
DNNB_REGISTER(register_cross_entropy("block", CePlan::block));

}  // namespace
}  // namespace dnnb::cuda_kernels
