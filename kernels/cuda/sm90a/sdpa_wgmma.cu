// The f16/bf16 attention forward for Hopper (sm_90a): FlashAttention 3's structure without
// ping-pong scheduling: TMA loads, wgmma products, a producer warpgroup and two consumer
// warpgroups. sdpa.cu takes it on compute capability 9.0 for D = Dv in {64, 128, 256}, q, k, v
// that TMA can describe, a scale > 0 and no softcap or additive mask (sdpa_wgmma_applies); the
// mma.sync kernel (sdpa_mma.cuh) takes the rest, softcap and the mask included (their
// element-wise rule would cost this kernel registers on every masked tile). It implements
// causal (top-left), the sliding window, GQA, any sq and sk, o rounded once and lse (f32,
// natural log) as sdpa_common.cuh states them.
//
// A block of 384 threads per (batch, head, 128 query rows):
//   warpgroup 0, the producer: one thread loads q's 128 x D tile once, then each key tile's K
//   and V (kBN keys: 128, 64 at D = 256) into a ring of 3 stages (2 at D = 256), K and V with
//   barriers of their own; its registers go to the consumers (setmaxnreg 24).
//   warpgroups 1 and 2, the consumers (setmaxnreg 240): each owns 64 query rows. Per key tile,
//   S = Q K^T (64 x kBN f32 in registers) by wgmma from shared memory, the key mask (causal,
//   window, key length) and the online softmax in registers, P rounded to the dtype and used as
//   wgmma's A operand straight from registers for O += P V (O: 64 x D f32 in registers). The
//   products of tile i + 1's S and tile i's P V are in flight together: the softmax of tile
//   i + 1 runs while the tensor cores do P V of tile i (FlashAttention 3's intra-warpgroup
//   overlap); O is rescaled once that P V completes.
// Key tiles are visited from the last one down, so the tiles that need the causal rule or the
// key length come first; tiles that no row of the block sees (causal, window) are skipped
// (key_range), and keys are masked (score -inf) only on tiles where some pair of a warp's 16
// rows and the tile's keys is hidden. Scores stay raw dot products: the row max is taken before
// scaling (scale > 0) and the exponent is s scale log2e - m log2e, one FMA.
//
// Synchronisation (mbarriers, tma.cuh): q_full (the producer's expect_tx plus q's bytes);
// per stage k_full, v_full (likewise) and k_empty, v_empty (256 arrivals: every consumer
// thread, once the wgmma reading the stage has completed). Fill f of a stage completes phase f
// of its full barrier (consumers wait parity f & 1); release f completes phase f of its empty
// barrier, which the producer waits for (parity f & 1) before fill f + 1.
//
// Shared memory, every tile 1024-byte aligned in TMA's 128-byte swizzle (wgmma.cuh): q as D/64
// slabs of 128 rows x 64 columns (one TMA box each, 16 KB), k and v of a stage as D/64 slabs of
// kBN keys x 64 columns. S = Q K^T reads q rows and k rows K-major (the k step of 16 moves the
// start by 32 bytes inside a slab, then to the next slab every 4 steps; consumer c's rows start
// 64 c rows into q's slabs). P V reads v N-major (imm-trans-b): a 16-key step moves the start by
// 16 rows (2048 bytes), and the descriptor's leading byte offset is the distance between slabs.
// Partial tiles: TMA fills rows past sq or sk with zeros; scores of keys >= sk are -inf by the
// rule (visible()), rows >= sq are never stored.
//
// Accumulator and A fragments: wgmma.cuh. Thread (warp w, g, q) of a consumer holds rows
// 16 w + g and 16 w + g + 8 of its 64, columns 8 n + 2 q + {0, 1}: s[4n + 2r + e] is row
// 16 w + g + 8 r, key j0 + 8 n + 2 q + e; a row's max and sum combine the 4 lanes of a quad.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/sdpa_mma.cuh"
#include "kernels/cuda/sm90a/sdpa_wgmma.h"
#include "kernels/cuda/sm90a/tma.cuh"
#include "kernels/cuda/sm90a/wgmma.cuh"

namespace dnnb::cuda_kernels::sdpa {
namespace {

inline constexpr int kWgRows = 128;  // query rows of a block
inline constexpr int kWgConsumers = 2;
inline constexpr int kWgThreads = 128 * (1 + kWgConsumers);
inline constexpr int kProducerRegs = 24, kConsumerRegs = 240;
static_assert(kWgRows == 64 * kWgConsumers, "64 rows per consumer warpgroup (wgmma's M)");
static_assert(128 * kProducerRegs + 128 * kWgConsumers * kConsumerRegs <= 65536, "the register file");

template <int D>
struct WgTile {
  static_assert(D == 64 || D == 128 || D == 256, "head dims of the wgmma kernel");
  static constexpr int kBN = D == 256 ? 64 : 128;   // keys per tile (S is 64 x kBN per consumer)
  static constexpr int kStages = D == 256 ? 2 : 3;  // as many as shared memory holds
  static constexpr int kSlabs = D / 64;             // 64-column (128-byte) slabs of a row
  static constexpr int kQSlab = kWgRows * 128;      // bytes of a q slab
  static constexpr int kKVSlab = kBN * 128;         // bytes of a k or v slab
  static constexpr int kQBytes = kSlabs * kQSlab;
  static constexpr int kKVBytes = kSlabs * kKVSlab;  // k or v of one stage
  static constexpr int kStageBytes = 2 * kKVBytes;
  static constexpr int kBarriers = 1 + 4 * kStages;  // q_full, k_full[], v_full[], k_empty[], v_empty[]
  static constexpr int kSmem = kQBytes + kStages * kStageBytes + 8 * kBarriers + 1024;  // + alignment

  static_assert(kQSlab % 1024 == 0 && kKVSlab % 1024 == 0 && (64 * 128) % 1024 == 0,
                "slabs and consumer c's q rows start on the swizzle period (1024 bytes)");
  static_assert(kBN % 16 == 0 && kBN <= 256 && kWgRows <= 256, "TMA boxes of at most 256 rows");
  static_assert(kBN / 16 * 2048 <= kKVSlab, "P V's 16-key steps stay inside a v slab");
  static_assert(D / 16 == 4 * kSlabs, "S's 16-column steps: 4 per 128-byte slab");
  static_assert(kSmem <= 227 * 1024, "shared memory of an SM");
  static_assert(kSmem < (1 << 18), "descriptor start addresses (14 bits of address >> 4) never carry");
};

template <typename T, int D>
__global__ void __launch_bounds__(kWgThreads, 1)
    sdpa_fwd_wgmma_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                          const __grid_constant__ CUtensorMap tm_v, const Attn p, const int m_blocks, const int chunk,
                          const bool o_pairs) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = WgTile<D>;
  constexpr int kBN = Tile::kBN, kStages = Tile::kStages;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t q_s = base;
  auto k_s = [&](int st) { return base + Tile::kQBytes + st * Tile::kStageBytes; };
  auto v_s = [&](int st) { return k_s(st) + Tile::kKVBytes; };
  const uint32_t bars = base + Tile::kQBytes + kStages * Tile::kStageBytes;
  const uint32_t q_full = bars;
  auto k_full = [&](int st) { return bars + 8 * (1 + st); };
  auto v_full = [&](int st) { return bars + 8 * (1 + kStages + st); };
  auto k_empty = [&](int st) { return bars + 8 * (1 + 2 * kStages + st); };
  auto v_empty = [&](int st) { return bars + 8 * (1 + 3 * kStages + st); };

  // The (batch, head) pairs in chunks of `chunk` whose k and v stay in L2 while the chunk's
  // blocks run (every block of a head reads all of its keys); inside a chunk the query blocks
  // from the last (the heaviest under causal) down, the chunk's heads side by side.
  const int x = static_cast<int>(blockIdx.x), per_chunk = m_blocks * chunk;
  const int first = x / per_chunk * chunk, idx = x % per_chunk;
  const int n_heads = min(chunk, p.batch * p.heads - first);
  const int mb = m_blocks - 1 - idx / n_heads;
  const int bh = first + idx % n_heads;
  const int b = bh / p.heads, h = bh % p.heads, kvh = h / p.group;
  const int m0 = mb * kWgRows;
  int lo, hi;
  key_range(p, m0, min(m0 + kWgRows, p.sq) - 1, lo, hi);
  const int t_lo = lo / kBN;
  const int n_tiles = hi > lo ? (hi + kBN - 1) / kBN - t_lo : 0;
  const int t_last = t_lo + n_tiles - 1;  // visit i loads keys (t_last - i) kBN ..
  const int wg = static_cast<int>(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    mbar_init(q_full, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(k_full(st), 1);
      mbar_init(v_full(st), 1);
      mbar_init(k_empty(st), 128 * kWgConsumers);
      mbar_init(v_empty(st), 128 * kWgConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      mbar_arrive_expect_tx(q_full, Tile::kQBytes);
#pragma unroll
      for (int sl = 0; sl < Tile::kSlabs; ++sl) tma_load_4d(q_s + sl * Tile::kQSlab, &tm_q, 64 * sl, m0, h, b, q_full);
      for (int it = 0; it < n_tiles; ++it) {
        const int st = it % kStages, fill = it / kStages, j0 = (t_last - it) * kBN;
        if (fill > 0) mbar_wait(k_empty(st), (fill - 1) & 1);
        mbar_arrive_expect_tx(k_full(st), Tile::kKVBytes);
#pragma unroll
        for (int sl = 0; sl < Tile::kSlabs; ++sl)
          tma_load_4d(k_s(st) + sl * Tile::kKVSlab, &tm_k, 64 * sl, j0, kvh, b, k_full(st));
        if (fill > 0) mbar_wait(v_empty(st), (fill - 1) & 1);
        mbar_arrive_expect_tx(v_full(st), Tile::kKVBytes);
#pragma unroll
        for (int sl = 0; sl < Tile::kSlabs; ++sl)
          tma_load_4d(v_s(st) + sl * Tile::kKVSlab, &tm_v, 64 * sl, j0, kvh, b, v_full(st));
      }
    }
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int c = wg - 1;  // rows 64 c .. 64 c + 63 of the block
  const int tid = static_cast<int>(threadIdx.x) % 128, warp = tid / 32, g = (tid % 32) / 4, t = tid % 4;
  const int warp_row0 = m0 + 64 * c + 16 * warp;
  const int rows[2] = {warp_row0 + g, warp_row0 + g + 8};
  const float scale_log2 = p.scale * kLog2e;
  // Row r sees keys [key_lo[r], key_hi[r]) (visible() of sdpa_common.cuh; none past sq).
  int key_lo[2], key_hi[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    key_hi[r] = rows[r] >= p.sq ? 0 : p.causal ? min(p.sk, rows[r] + 1) : p.sk;
    key_lo[r] = p.window > 0 ? rows[r] - p.window + 1 : 0;
  }
  // Descriptors of q (this warpgroup's rows), k and v of stage 0; a stage adds kStageBytes, a k
  // step its byte offset, all >> 4 into the start address field (no carry: addresses < 2^18).
  const uint64_t desc_q = desc_k_major(q_s + c * 64 * 128);
  const uint64_t desc_k = desc_k_major(k_s(0));
  const uint64_t desc_v = desc_n_major(v_s(0), Tile::kKVSlab);
  constexpr uint32_t kStageStep = Tile::kStageBytes >> 4;

  float o[D / 2];            // O: 64 x D of this warpgroup, accumulator fragment
  float s[kBN / 2];          // S, then P in f32: 64 x kBN
  uint32_t pa[kBN / 16][4];  // P rounded, the A fragment of P V's kBN / 16 k steps
  static_assert(sizeof(pa) == 64 * kBN / 128 * 2, "a thread's 64 kBN / 128 elements of P, 16 bits each");
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < kBN / 2; ++i) s[i] = 0.f;
  float m_row[2] = {-INFINITY, -INFINITY}, l_row[2] = {0.f, 0.f};  // l: this lane's part of the sum
  float alpha[2];

  // S = Q K^T of the tile in stage st (4 k steps of 32 bytes per 128-byte slab).
  auto issue_s = [&](int st) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t qoff = ((kk / 4) * Tile::kQSlab + (kk % 4) * 32) >> 4;
      const uint32_t koff = st * kStageStep + (((kk / 4) * Tile::kKVSlab + (kk % 4) * 32) >> 4);
      wgmma_ss<T, kBN, 0>(s, desc_q + qoff, desc_k + koff, kk > 0 ? 1u : 0u);
    }
  };
  // O += P V of the tile in stage st: k step kk is keys 16 kk .. 16 kk + 15, v rows 16 kk on
  // (2048 bytes a step, 128 in the address field).
  auto issue_pv = [&](int st) {
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) wgmma_rs<T, D, 1>(o, pa[kk], desc_v + (st * kStageStep + kk * 128), 1u);
  };
  // The online softmax of the tile at keys j0 (s holds S = Q K^T, complete): hidden keys get
  // -inf, s becomes P (f32), m_row and l_row move on, alpha[r] is what O's row r is scaled by.
  // m_row is in units of the final score (dot times scale).
  auto softmax = [&](int j0) {
    if (!whole_tile(p, j0, kBN, warp_row0)) {
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = j0 + 8 * n + 2 * t + (e & 1), r = e >> 1;
          if (j < key_lo[r] || j >= key_hi[r]) s[4 * n + e] = -INFINITY;
        }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) mx = fmaxf(mx, fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_row[r], mx * p.scale);
      const float shift = row_shift(m_new);
      alpha[r] = m_row[r] == -INFINITY ? 0.f : ex2_approx_ftz(row_shift(m_row[r]) - shift);
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pv = ex2_approx_ftz(fmaf(s[4 * n + 2 * r + e], scale_log2, -shift));
          s[4 * n + 2 * r + e] = pv;
          sum += pv;
        }
      l_row[r] = l_row[r] * alpha[r] + sum;
      m_row[r] = m_new;
    }
  };
  // P's A fragments from s (wgmma.cuh: columns 16 kk .. 16 kk + 15 are s[8 kk .. 8 kk + 7]).
  auto pack_p = [&] {
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i) pa[kk][i] = pack2<T>(s[8 * kk + 2 * i], s[8 * kk + 2 * i + 1]);
  };
  auto rescale_o = [&] {
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      o[4 * j] *= alpha[0];
      o[4 * j + 1] *= alpha[0];
      o[4 * j + 2] *= alpha[1];
      o[4 * j + 3] *= alpha[1];
    }
  };
  auto fence_s = [&] {
#pragma unroll
    for (int i = 0; i < kBN / 2; ++i) fence_operand(s[i]);
  };
  auto fence_o = [&] {
#pragma unroll
    for (int i = 0; i < D / 2; ++i) fence_operand(o[i]);
  };

  if (n_tiles > 0) {
    mbar_wait(q_full, 0);
    // Visit 0: S and its softmax (O is still 0, alpha 0).
    mbar_wait(k_full(0), 0);
    wgmma_fence();
    issue_s(0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_s();
    mbar_arrive(k_empty(0));
    softmax(t_last * kBN);
    // Visit it issues S of tile it and P V of tile it - 1, then runs the softmax of tile it
    // while P V runs. The wait for that P V opens the next visit: at the top of the loop body,
    // in another basic block than the softmax, so that ptxas cannot schedule it (a
    // WARPGROUP.DEPBAR) ahead of the softmax and lose the overlap.
    for (int it = 1; it < n_tiles; ++it) {
      const int st = it % kStages, prev = (it - 1) % kStages;
      wgmma_wait<0>();  // P V of tile it - 2 (if any): o and pa may be written again
      fence_o();
      fence_s();
      if (it >= 2) mbar_arrive(v_empty((it - 2) % kStages));
      rescale_o();
      pack_p();
      mbar_wait(k_full(st), (it / kStages) & 1);
      mbar_wait(v_full(prev), ((it - 1) / kStages) & 1);  // loaded before k of this visit
      wgmma_fence();                                      // o (rescaled) and pa (packed) were written by this thread
      issue_s(st);
      wgmma_commit();
      issue_pv(prev);
      wgmma_commit();
      wgmma_wait<1>();  // S of tile it has completed; P V of tile it - 1 may still run
      fence_s();
      mbar_arrive(k_empty(st));
      softmax((t_last - it) * kBN);
    }
    wgmma_wait<0>();
    fence_o();
    fence_s();
    rescale_o();
    pack_p();
    const int st = (n_tiles - 1) % kStages;
    mbar_wait(v_full(st), ((n_tiles - 1) / kStages) & 1);
    wgmma_fence();
    issue_pv(st);
    wgmma_commit();
    wgmma_wait<0>();
    fence_o();
    // The last two v stages need no release: the producer loads nothing more.
  }

  // Epilogue: o / l rounded once, lse from the row's max and sum (o = 0, lse = -inf for a row
  // that sees no key).
  T* og = p.o.head<T>(b, h);
  float* lg = p.lse.head<float>(b, h);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_row[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int i = rows[r];
    if (i >= p.sq) continue;
    const float inv_l = l > 0.f ? 1.f / l : 0.f;
    T* orow = og + static_cast<int64_t>(i) * p.o.ss;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      const int col = 8 * j + 2 * t;
      const float v0 = o[4 * j + 2 * r] * inv_l, v1 = o[4 * j + 2 * r + 1] * inv_l;
      if (o_pairs) {
        *reinterpret_cast<uint32_t*>(orow + col) = pack2<T>(v0, v1);
      } else {
        orow[static_cast<int64_t>(col) * p.o.se] = from_float<T>(v0);
        orow[static_cast<int64_t>(col + 1) * p.o.se] = from_float<T>(v1);
      }
    }
    if (t == 0) lg[static_cast<int64_t>(i) * p.lse.ss] = row_lse(m_row[r], l);
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side.

template <typename T, int D>
Status launch(const CudaDevice& device, const Attn& a, const CUtensorMap& q, const CUtensorMap& k,
              const CUtensorMap& v) {
  constexpr int kSmem = WgTile<D>::kSmem;
  const int64_t m_blocks = ceil_div(a.sq, kWgRows);
  const int64_t blocks = m_blocks * a.batch * a.heads;
  if (blocks > INT_MAX) return Status::unsupported("cuda sdpa: " + std::to_string(blocks) + " blocks exceed the grid");
  // Heads per chunk: as many kv heads' k and v as fit in 8 MB of L2 (at least one), with their
  // whole GQA groups.
  const int64_t kv_bytes = static_cast<int64_t>(a.sk) * (a.d + a.dv) * 2;
  const int64_t kv_heads = std::max<int64_t>(1, (int64_t{8} << 20) / kv_bytes);
  const int chunk = static_cast<int>(std::min<int64_t>(kv_heads * a.group, int64_t{a.batch} * a.heads));
  auto kernel = sdpa_fwd_wgmma_kernel<T, D>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  kernel<<<static_cast<unsigned>(blocks), kWgThreads, kSmem, device.stream()>>>(q, k, v, a, static_cast<int>(m_blocks),
                                                                                chunk, pair_rows(a.o));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <int D>
Status launch_dims(const CudaDevice& device, const Attn& a, DType dtype) {
  auto q = operand_map(dtype, a.q, D, a.sq, a.heads, a.batch, kWgRows);
  if (!q) return q.status();
  auto k = operand_map(dtype, a.k, D, a.sk, a.kv_heads, a.batch, WgTile<D>::kBN);
  if (!k) return k.status();
  auto v = operand_map(dtype, a.v, D, a.sk, a.kv_heads, a.batch, WgTile<D>::kBN);
  if (!v) return v.status();
  return dtype == DType::bf16 ? launch<__nv_bfloat16, D>(device, a, *q, *k, *v)
                              : launch<__half, D>(device, a, *q, *k, *v);
}

}  // namespace

// TMA can describe the operand [batch, heads, rows, D]: 16-byte aligned, unit element stride,
// the other strides positive multiples of 16 bytes below 2^40 bytes (unused where the extent is 1).
bool tma_operand(const Operand& x, int64_t rows, int64_t heads, int64_t batch) {
  auto fits = [](int64_t stride, int64_t extent) {
    return extent == 1 || (stride > 0 && stride % 8 == 0 && stride < (int64_t{1} << 39));
  };
  return aligned_to(x.data, 16) && x.se == 1 && fits(x.ss, rows) && fits(x.sh, heads) && fits(x.sb, batch);
}

// The 4-D map (D, rows, heads, batch) of an operand, boxes of 64 columns x box_rows rows; strides
// of extents 1 replaced by the contiguous ones (unused, but the map needs valid strides).
Result<CUtensorMap> operand_map(DType dtype, const Operand& x, int d, int64_t rows, int64_t heads, int64_t batch,
                                uint32_t box_rows) {
  const int64_t ss = rows == 1 ? d : x.ss;
  const int64_t sh = heads == 1 ? rows * ss : x.sh;
  const int64_t sb = batch == 1 ? heads * sh : x.sb;
  const int64_t dims[4] = {d, rows, heads, batch}, strides[3] = {ss, sh, sb};
  const uint32_t box[4] = {64, box_rows, 1, 1};
  return tensor_map_16bit(dtype, x.data, 4, dims, strides, box, "cuda sdpa");
}

bool sdpa_wgmma_applies(const CudaDevice& device, const Attn& a, DType dtype) {
  static const bool enabled = [] {
    const char* env = std::getenv("DNNB_CUDA_SDPA_WGMMA");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  if (!enabled || (dtype != DType::bf16 && dtype != DType::f16)) return false;
  if (a.d != a.dv || (a.d != 64 && a.d != 128 && a.d != 256)) return false;
  if (a.mask.data != nullptr || a.softcap > 0.f || !(a.scale > 0.f)) return false;
  if (!tma_operand(a.q, a.sq, a.heads, a.batch) || !tma_operand(a.k, a.sk, a.kv_heads, a.batch) ||
      !tma_operand(a.v, a.sk, a.kv_heads, a.batch))
    return false;
  return is_sm90(device);
}

Status launch_sdpa_wgmma(const CudaDevice& device, const Attn& a, DType dtype) {
  if (!sdpa_wgmma_applies(device, a, dtype))
    return Status::unsupported("cuda sdpa: the wgmma kernel does not take this problem");
  switch (a.d) {
    case 64:
      return launch_dims<64>(device, a, dtype);
    case 128:
      return launch_dims<128>(device, a, dtype);
    default:
      return launch_dims<256>(device, a, dtype);
  }
}

}  // namespace dnnb::cuda_kernels::sdpa
