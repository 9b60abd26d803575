// The persistent-warp cross_entropy kernel (cross_entropy.cu; f32's kernel, and bf16's for rows
// the bulk-copy form does not take): each warp streams the rows warp, warp + warps, ... chunk by
// chunk with the next chunk already in flight, and the last block to finish writes the mean.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/row_pipe.cuh"

namespace dnnb::cuda_kernels {

// ---------------------------------------------------------------------------------------------
// ce_stats_pipe_kernel. Why a warp per row is not enough (ce_stats_warp_kernel, cross_entropy.cu:
// 2.1 TB/s of a 4.5 TB/s read stream at 16384 x 8192 bf16 on the H200): each warp issues its 4
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
// are 16-byte aligned with C % kVec == 0; other shapes take ce_stats_warp_kernel.
constexpr int kCePipeVecs = 8;       // per lane per chunk: 128 bytes
constexpr int kCePipeWarps = 8;      // per block
constexpr int kCePipeMinBlocks = 2;  // <= 128 registers: two chunks (2 x 32) + the fold
template <typename T>
inline constexpr int kCeChunkCols = 32 * kCePipeVecs * kVec<T>;  // columns per warp chunk

// Chunk `it` of a row into registers: vector u of the lane at column (it*32*U + u*32 + lane) * W
// (each load instruction of the warp covers 512 contiguous bytes); columns past the row read -inf.
// The load goes through 32-bit words preset to -inf: a predicated 16-byte load into them. Filled
// element by element, bf16 padding becomes PRMT merges of the loaded registers, which makes every
// chunk wait for its own loads right after issuing them (no overlap with the fold).
// kExact: the row is whole chunks (C % kCeChunkCols == 0, e.g. 8192 columns), so no vector lies
// past its end: plain loads, no preset words and no bounds test (in the predicated form these
// presets and tests are about 1 of its 7.5 instructions per element).
template <typename T, bool kExact>
__device__ __forceinline__ void ce_load_chunk(Vec16<T> (&buf)[kCePipeVecs], const T* x_row,
                                              int it, int lane, int cols) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16>, "f32 or bf16");
  constexpr int W = kVec<T>;
  constexpr uint32_t kNegInf = sizeof(T) == 4 ? 0xff800000u : 0xff80ff80u;  // -inf (x2 for bf16)
  const T* chunk = x_row + (it * kCePipeVecs * 32 + lane) * W;
#pragma unroll
  for (int u = 0; u < kCePipeVecs; ++u) {
    if constexpr (kExact) {
      buf[u] = *reinterpret_cast<const Vec16<T>*>(chunk + u * 32 * W);
    } else {
      const int c = ((it * kCePipeVecs + u) * 32 + lane) * W;
      uint4 bits = make_uint4(kNegInf, kNegInf, kNegInf, kNegInf);
      if (c < cols) bits = *reinterpret_cast<const uint4*>(x_row + c);  // cols % W == 0: whole
      memcpy(&buf[u], &bits, sizeof(bits));
    }
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
        p[u * (W / 2) + i] = __hmax2_nan(bf16_pair(buf[u], i), bf16_pair(buf[u + H], i));
    tree_fold<H * W / 2>(p, [](__nv_bfloat162 x, __nv_bfloat162 y) { return __hmax2_nan(x, y); });
    return max_nan(__low2float(p[0]), __high2float(p[0]));
  } else {
    constexpr int N = kCePipeVecs * W;
    float p[N];
#pragma unroll
    for (int u = 0; u < kCePipeVecs; ++u)
#pragma unroll
      for (int k = 0; k < W; ++k) p[u * W + k] = element_float(buf[u], k);
    tree_fold<N>(p, [](float x, float y) { return max_nan(x, y); });
    return p[0];
  }
}

// Folds a chunk into the lane's running max m and the sums s[k] of exp(x - m) over the
// elements at position k of each vector: one rescale check per chunk, and kVec independent add
// chains of kCePipeVecs adds per chunk (with one or two accumulators the bf16 kernel is
// latency-bound on the add chain).
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
  if (m == -INFINITY) {
    // Nothing but -inf (and NaN) so far: nothing to add, but a NaN must still make the row's
    // loss NaN, as torch's. ce_chunk_max propagates NaN, so vm says whether the chunk had one
    // (a scan of the chunk here would cost registers and time on every chunk).
    if (isnan(vm)) s[0] = NAN;
    return;
  }
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

// Row r of the logits. kUniform: the host checked RowIndex::uniform_rows() (outer_dims <= 1, as
// every 2-D logits tensor; stride[0] is 0 when there is no outer dim, and then r is 0), so the
// start is one multiply: the bulk-copy kernel (cross_entropy_tma.cuh) takes this form, which
// keeps row_offset's division loop and its registers out of it.
template <bool kUniform, typename T>
__device__ __forceinline__ const T* ce_row(const CeArgs<T>& a, int64_t r) {
  if constexpr (kUniform)
    return a.x.data + r * a.x.ri.stride[0];
  else
    return a.x.row(r);
}

// x[row, t] for the loss, or 0 when the row is ignored or t is outside [0, C) (the loss is then
// 0 or NaN without it: ce_pipe_row_loss).
template <typename T, bool kUniform = false>
__device__ __forceinline__ float ce_target_logit(const CeArgs<T>& a, int64_t row, int64_t t) {
  if (t == a.ignore_index || t < 0 || t >= a.cols) return 0.f;
  return to_float(ce_row<kUniform>(a, row)[t * a.x.ri.col_stride]);
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

// Folds chunk (p.row, p.it), held in cur, into the warp's row statistics; `row_done`: it is the
// row's last chunk, whose loss is then added. Shared by ce_pipe_step and the bulk-copy kernel
// (cross_entropy_tma.cuh), which only differ in where the chunk comes from. kUniform: ce_row.
template <typename T, bool kFastExp, bool kUniform = false>
__device__ __forceinline__ void ce_pipe_fold(const CeArgs<T>& a, CePipeLane<T>& p,
                                             const Vec16<T> (&cur)[kCePipeVecs], bool row_done,
                                             int64_t warps) {
  if (p.it == 0) {  // both used a row later, so their latency hides behind the row's chunks
    p.x_t = ce_target_logit<T, kUniform>(a, p.row, p.tgt);  // p.tgt: loaded a row before
    if (p.row + warps < a.rows) p.tgt_next = a.target[(p.row + warps) * a.target_stride];
  }
  ce_fold_chunk<T, kFastExp>(cur, p.m, p.ms, p.s);
  if (row_done) {
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
}

// Loads the chunk after (p.row, p.it) into nxt (the next chunk of the row, or the first of the
// warp's next row), then folds cur, which holds chunk (p.row, p.it); a finished row adds its
// loss. Moves p to the next chunk and returns whether the warp has one.
template <typename T, bool kFastExp, bool kExact>
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
  if (more) ce_load_chunk<T, kExact>(nxt, a.x.row(next_row), next_it, lane, cols);
  ce_pipe_fold<T, kFastExp>(a, p, cur, next_it == 0, warps);
  p.row = next_row;
  p.it = next_it;
  return more;
}

// The mean of ce_stats_pipe_kernel without a second launch (a ce_mean_kernel launch would add
// about 6% to bf16 at 16384 x 8192).
// Every warp writes its (loss sum, kept rows) to a.partials[warp]; each block then counts
// itself done on a.done, and the block that finishes last sums the partials in warp order
// (deterministic for a given grid) and writes the loss. That block also puts the counter back
// to 0 for the next launch: the counter is the device's (grid_counters) and launches on the
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

template <typename T, bool kFastExp, bool kExact>
__global__ void __launch_bounds__(32 * kCePipeWarps, kCePipeMinBlocks)
    ce_stats_pipe_kernel(CeArgs<T> a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit logits only");
  constexpr int kChunkCols = kCeChunkCols<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kCePipeWarps;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kCePipeWarps + (threadIdx.x >> 5);
  const int cols = static_cast<int>(a.cols);  // <= 65536 (ce_use_warp_rows)
  const int chunks = (cols + kChunkCols - 1) / kChunkCols;

  CePipeLane<T> p{first, 0, 0, 0, 0.f, -INFINITY, -INFINITY, {}, 0.f, 0};
  if (first < a.rows) {  // warp-uniform; a warp without rows still reports (0, 0) below
    Vec16<T> buf0[kCePipeVecs];
    Vec16<T> buf1[kCePipeVecs];
    ce_load_chunk<T, kExact>(buf0, a.x.row(first), 0, lane, cols);
    p.tgt = a.target[first * a.target_stride];
    // Two steps per iteration with the buffers swapped: no register copies between chunks.
    while (ce_pipe_step<T, kFastExp, kExact>(a, p, buf0, buf1, lane, cols, chunks, warps) &&
           ce_pipe_step<T, kFastExp, kExact>(a, p, buf1, buf0, lane, cols, chunks, warps)) {
    }
  }
  ce_pipe_mean(a, p.loss_sum, p.kept, lane, first);
}

// Launches a persistent cross-entropy kernel of kCePipeWarps warps per block (ce_stats_pipe_kernel
// or ce_stats_tma_kernel, which both end in ce_pipe_mean) with `smem` bytes of dynamic shared
// memory: as many blocks as fit per SM, at most one warp per row; false when none fits (nothing
// launched). pipe_blocks_per_sm opts the kernel into `smem` (checked) when it is not 0.
template <typename T>
Result<bool> ce_launch_persistent(const CudaDevice& device, CeArgs<T> a,
                                  void (*kernel)(CeArgs<T>), int smem) {
  constexpr int kBlock = 32 * kCePipeWarps;
  auto per_sm =
      pipe_blocks_per_sm(device, reinterpret_cast<const void*>(kernel), kBlock, smem, smem);
  if (!per_sm) return per_sm.status();
  if (*per_sm == 0) return false;
  const int64_t grid = std::min<int64_t>(ceil_div(a.rows, kCePipeWarps),
                                         static_cast<int64_t>(*per_sm) * device.sm_count());
  auto counters = grid_counters(device);
  if (!counters) return counters.status();
  auto scratch = StreamScratch::allocate(device, sizeof(float2) * grid * kCePipeWarps);
  if (!scratch) return scratch.status();
  a.splits = 1;
  a.partials = scratch->as<float2>();
  a.done = &(*counters)->cross_entropy_done;
  kernel<<<static_cast<unsigned>(grid), kBlock, smem, device.stream()>>>(a);  // and the mean
  DNNB_CUDA_CHECK_LAUNCH();
  DNNB_TRY(scratch->release());
  return true;
}

// Launches ce_stats_pipe_kernel (and the mean, in the same launch) when `a` fits it (many rows,
// 16-byte aligned rows, C % kVec == 0); false: nothing launched. Rows of whole chunks take the
// kernel's exact form.
template <typename T>
Result<bool> try_launch_ce_pipe(const CudaDevice& device, CeArgs<T> a) {
  if (!ce_use_warp_rows(device, a.rows, a.cols) || a.cols == 0 || !a.x.vec ||
      a.cols % kVec<T> != 0)
    return false;
  const bool exact = a.cols % kCeChunkCols<T> == 0;
  void (*kernel)(CeArgs<T>) = nullptr;
  if constexpr (sizeof(T) == 2) {  // bf16: the 2-instruction exp
    kernel = exact ? ce_stats_pipe_kernel<T, true, true>
                   : ce_stats_pipe_kernel<T, true, false>;
  } else {
    kernel = exact ? ce_stats_pipe_kernel<T, false, true>
                   : ce_stats_pipe_kernel<T, false, false>;
  }
  return ce_launch_persistent<T>(device, a, kernel, 0);
}

}  // namespace dnnb::cuda_kernels
