// The bulk-copy (TMA) form of the persistent-warp cross_entropy kernel: bf16's kernel in
// cross_entropy.cu. Same row stream, fold and mean as ce_stats_pipe_kernel
// (cross_entropy_pipe.cuh); only where a chunk waits differs. At 16384 x 8192 bf16 on the H200 it
// runs 1-1.5% faster than the register pipeline; f32 runs faster on the register pipeline.
//
// Why: ce_stats_pipe_kernel is latency-bound (long scoreboard stalls are 44% of its stalls).
// Each warp holds one 4 KB chunk in flight in registers while it folds the other, 16 warps per
// SM: at most 64 KB of reads in flight per SM, and a third register buffer does not fit its 128
// registers (2 blocks per SM). Here the chunks land in shared memory instead: each warp owns a
// ring of kStages 4 KB stages filled by one `cp.async.bulk` each (the Hopper bulk-copy engine,
// 1-D: no tensor map, one instruction per 4 KB where per-thread cp.async needs 256; a ring of
// cp.async copies is slower than the register kernel). The fold reads its chunk from the stage
// with the same 16-byte vectors per lane as the register kernel (LDS.128, conflict-free: each
// quarter warp reads 128 contiguous bytes), and the stage is refilled with the chunk kStages
// ahead as soon as every lane has read it, before the fold: so while a warp folds chunk k,
// chunks k + 1 ... k + kStages are in flight or landed.
//
// Shape (8 warps per block as the register kernel, so ce_pipe_mean and its partials serve both;
// 227 KB of shared memory per SM): CeTma3x2, 3 stages, 2 blocks per SM: 16 warps x 12 KB = 192 KB,
// up to 192 KB in flight per SM (3x the register kernel), same warps for the arithmetic.
// 4 KB stages keep the 16-byte lane layout of the register kernel's chunk (8 vectors per lane);
// 4 stages of 4 KB would leave room for only 1 block of 8 warps per SM, and 2 stages x 3 blocks
// (24 warps, the same bytes) is slower.

// Synchronisation, per warp (no block barrier in the loop): stage s has one mbarrier, count 1.
// Lane 0 arms it (mbarrier.arrive.expect_tx, 4096 bytes) and issues the copy, whose completion
// (complete_tx) ends the barrier's phase; every lane waits on the phase parity (the j-th fill of
// a stage completes phase j: parity j & 1). Refill: the lanes read the stage into registers,
// __syncwarp (their reads are ordered before what lane 0 does next), then lane 0 issues
// fence.proxy.async.shared::cta (the copy writes through the async proxy; the fence orders the
// generic-proxy reads before it) and the next copy into that stage. A stage is never re-armed
// before its previous phase completed: it is re-armed only after the lanes waited on that phase.
// Only chunks the warp will fold are issued, so none is in flight when the kernel ends.
//
// Taken for rows of whole chunks (C % 2048 == 0 bf16, % 1024 f32) with 16-byte aligned rows and
// unit column stride (RowView::vec), one stride apart (ce_row<true>): each chunk is 4096
// contiguous, 16-byte aligned bytes, as cp.async.bulk requires. Other shapes take the register
// kernel, then the warp kernel.
#pragma once
#include <cstdint>

#include "kernels/cuda/bulk_copy.cuh"
#include "kernels/cuda/cross_entropy_pipe.cuh"

namespace dnnb::cuda_kernels {

inline constexpr int kCeTmaChunkBytes = kCePipeVecs * 32 * 16;  // one warp chunk: 4096 bytes

template <int kStagesValue, int kMinBlocksValue>
struct CeTmaShape {
  static constexpr int kStages = kStagesValue;
  static constexpr int kMinBlocks = kMinBlocksValue;
  // The stages of every warp of the block, then one 8-byte mbarrier per stage.
  static constexpr int kStageBytes = kCePipeWarps * kStages * kCeTmaChunkBytes;
  static constexpr int kSmem = kStageBytes + kCePipeWarps * kStages * 8;
};
using CeTma3x2 = CeTmaShape<3, 2>;  // 2 x 98,496 bytes per SM

template <typename T, bool kFastExp, typename Shape>
__global__ void __launch_bounds__(32 * kCePipeWarps, Shape::kMinBlocks)
    ce_stats_tma_kernel(CeArgs<T> a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit logits only");
  static_assert(kCeChunkCols<T> * sizeof(T) == kCeTmaChunkBytes, "a chunk is one stage");
  constexpr int kStages = Shape::kStages;
  constexpr int kChunkCols = kCeChunkCols<T>;
  constexpr int kStageVecs = 32 * kCePipeVecs;
  extern __shared__ __align__(128) unsigned char ce_tma_smem[];
  const int lane = threadIdx.x & 31;
  const int warp_in_block = threadIdx.x >> 5;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kCePipeWarps;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kCePipeWarps + warp_in_block;
  const int chunks = static_cast<int>(a.cols) / kChunkCols;  // whole chunks (try_launch_ce_tma)
  Vec16<T>* ring = reinterpret_cast<Vec16<T>*>(ce_tma_smem) + warp_in_block * kStages * kStageVecs;
  uint64_t* full = reinterpret_cast<uint64_t*>(ce_tma_smem + Shape::kStageBytes) +
                   warp_in_block * kStages;

  CePipeLane<T> p{first, 0, 0, 0, 0.f, -INFINITY, -INFINITY, {}, 0.f, 0};
  if (first < a.rows) {  // warp-uniform; a warp without rows still reports (0, 0) below
    if (lane == 0) {
#pragma unroll
      for (int s = 0; s < kStages; ++s) mbar_init(smem_addr(&full[s]), 1);
      fence_mbarrier_init();
    }
    __syncwarp();
    // The producer's position (every lane keeps it; lane 0 issues): the next chunk to copy.
    int64_t prow = first;
    int pit = 0;
    const auto issue_next = [&](int stage) {
      if (lane == 0) {
        const uint32_t bar = smem_addr(&full[stage]);
        mbar_arrive_expect_tx(bar, kCeTmaChunkBytes);
        bulk_load(smem_addr(ring + stage * kStageVecs), ce_row<true>(a, prow) + pit * kChunkCols,
                  kCeTmaChunkBytes, bar);
      }
      if (++pit == chunks) {
        pit = 0;
        prow += warps;
      }
    };
#pragma unroll
    for (int s = 0; s < kStages; ++s)
      if (prow < a.rows) issue_next(s);
    p.tgt = a.target[first * a.target_stride];
    int stage = 0;
    uint32_t phase = 0;
    while (true) {
      mbar_wait(smem_addr(&full[stage]), phase);
      Vec16<T> cur[kCePipeVecs];
      const Vec16<T>* src = ring + stage * kStageVecs;
#pragma unroll
      for (int u = 0; u < kCePipeVecs; ++u) cur[u] = src[u * 32 + lane];
      __syncwarp();  // every lane has read the stage: it may be refilled
      if (prow < a.rows) {
        if (lane == 0) fence_proxy_async_shared();
        issue_next(stage);
      }
      int64_t next_row = p.row;
      int next_it = p.it + 1;
      if (next_it == chunks) {
        next_row = p.row + warps;
        next_it = 0;
      }
      ce_pipe_fold<T, kFastExp, true>(a, p, cur, next_it == 0, warps);
      p.row = next_row;
      p.it = next_it;
      if (next_row >= a.rows) break;
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
  }
  ce_pipe_mean(a, p.loss_sum, p.kept, lane, first);
}

// Launches ce_stats_tma_kernel (and the mean, in the same launch) for rows of whole 4 KB chunks
// with 16-byte aligned rows (see above); false: nothing launched, the caller takes another plan.
template <typename T>
Result<bool> try_launch_ce_tma(const CudaDevice& device, CeArgs<T> a) {
  if (!ce_use_warp_rows(device, a.rows, a.cols) || a.cols == 0 || !a.x.vec ||
      a.cols % kCeChunkCols<T> != 0 || !a.x.ri.uniform_rows())
    return false;
  constexpr bool kFastExp = sizeof(T) == 2;  // bf16: the 2-instruction exp
  return ce_launch_persistent<T>(device, a, ce_stats_tma_kernel<T, kFastExp, CeTma3x2>, CeTma3x2::kSmem);
}

}  // namespace dnnb::cuda_kernels
