// The f16/bf16 attention backward for Hopper (sm_90a): the forward's machinery (sdpa_wgmma.cu:
// TMA loads into a ring of stages on full/empty mbarriers, a producer warpgroup and two wgmma
// consumer warpgroups) applied to the two kernels of the existing backward (sdpa_bwd_mma.cuh),
// which stay deterministic: no atomics, each output accumulated in one block's registers and
// rounded once. sdpa_bwd.cu takes it on compute capability 9.0 for D = Dv in {64, 128}, q, k,
// v, do that TMA can describe, scale > 0 and no softcap or mask (sdpa_bwd_wgmma_applies).
//
// Three launches on one stream:
//   rows kernel: per (batch, head, row) lse log2e and D_i = do_i . o_i into the workspace, rows
//     padded to a multiple of 128 per head. Rows past sq, and rows that see no key (lse -inf),
//     get lse log2e = +inf, so p = exp2(s scale log2e - lse log2e) is 0 there without a test.
//   dq kernel, a block per (batch, head, 128 query rows): the producer loads q and do once and
//     then each key tile's k and v (kBN keys) into a 3-stage ring; consumer c owns rows
//     64 c .. 64 c + 63 and per tile computes S = Q K^T and dP = dO V^T (wgmma, both operands
//     K-major in shared memory), P = exp2(S scale log2e - lse log2e), dS = P (dP - D) in
//     registers, then dQ += dS K with dS as the register A operand and k read N-major (as the
//     forward reads v). S and dP of tile i + 1 are issued before dQ of tile i, which runs while
//     the next dS is formed (the forward's overlap).
//   dk/dv kernel, a block per (batch, kv head, 128 keys): the producer loads k and v once and
//     then, for every query head of the group and every 64-row query tile that sees the keys,
//     q, do and the rows' lse log2e and D (bulk copies from the workspace) into a 3-stage
//     ring; consumer c owns keys 64 c .. 64 c + 63 and per step computes S^T = K Q^T and
//     dP^T = V dO^T, P^T and dS^T = P^T (dP^T - D) (lse and D per column, from shared memory),
//     then dV += P^T dO and dK += dS^T Q with P^T and dS^T as register A operands and do, q read
//     N-major. dk and dv sum the group in registers.
// dq = scale dS K and dk = scale dS^T Q (the scale applied once at the store).
//
// Synchronisation (bulk_copy.cuh, tma.cuh), as the forward's: a stage's full barrier takes the
// producer's expect_tx plus its bytes; its empty barrier 256 arrivals (every consumer thread,
// once the wgmma reading the stage completed). Fill f of a stage completes phase f of its full
// barrier (consumers wait parity f & 1); release f phase f of its empty barrier, which the
// producer waits for (parity f & 1) before fill f + 1.
//
// Shared memory, every tile 1024-byte aligned in the 128-byte swizzle (wgmma.cuh): an operand
// tile of R rows is D/64 slabs of R rows x 64 columns (one TMA box each). K-major reads move 32
// bytes per 16-column k step inside a slab and to the next slab every 4 steps; a consumer's 64
// rows of a 128-row tile start 64 x 128 bytes into each slab. N-major reads (the B operand of
// dQ, dV, dK) move 16 rows (2048 bytes) per k step of 16 keys or queries, with the slab size as
// the descriptor's leading byte offset. Partial tiles: TMA fills rows past sq or sk with zeros;
// the score rule (visible()) zeroes P where keys >= sk, lse log2e = +inf where rows >= sq.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/sdpa_bwd_mma.cuh"
#include "kernels/cuda/sm90a/sdpa_bwd_wgmma.h"
#include "kernels/cuda/sm90a/sdpa_wgmma.h"
#include "kernels/cuda/sm90a/tma.cuh"
#include "kernels/cuda/sm90a/wgmma.cuh"

namespace dnnb::cuda_kernels::sdpa {
namespace {

inline constexpr int kConsumers = 2;
inline constexpr int kThreads = 128 * (1 + kConsumers);
inline constexpr int kProducerRegs = 24, kConsumerRegs = 240;
inline constexpr int kRowPad = 128;  // workspace rows of a head: sq rounded up to this
static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "the register file");

// The dq kernel's tiles: 128 query rows (64 per consumer), kBN keys a stage.
template <int D>
struct DqWg {
  static_assert(D == 64 || D == 128, "head dims of the wgmma backward");
  static constexpr int kBM = 128;
  static constexpr int kBN = D == 64 ? 128 : 64;  // dQ (D/2), S, dP (kBN/2 each) and dS (kBN/4) in registers
  static constexpr int kStages = 3;
  static constexpr int kSlabs = D / 64;
  static constexpr int kQSlab = kBM * 128, kKVSlab = kBN * 128;
  static constexpr int kQBytes = kSlabs * kQSlab;    // q or do
  static constexpr int kKVBytes = kSlabs * kKVSlab;  // k or v of a stage
  static constexpr int kStageBytes = 2 * kKVBytes;
  static constexpr int kBarriers = 1 + 2 * kStages;  // qdo_full, full[], empty[]
  static constexpr int kSmem = 2 * kQBytes + kStages * kStageBytes + 8 * kBarriers + 1024;
  static_assert(kQSlab % 1024 == 0 && kKVSlab % 1024 == 0, "slabs on the swizzle period");
  static_assert(kBN / 16 * 2048 <= kKVSlab, "dQ's 16-key steps stay inside a k slab");
  static_assert(kSmem <= 227 * 1024 && kSmem < (1 << 18), "shared memory; descriptor addresses never carry");
};

// The dk/dv kernel's tiles: 128 keys (64 per consumer), kBM query rows a stage.
template <int D>
struct DkvWg {
  static_assert(D == 64 || D == 128, "head dims of the wgmma backward");
  static constexpr int kBN = 128;
  static constexpr int kBM = 64;  // dK, dV (D/2 each), S^T, dP^T (kBM/2 each) in registers
  // S^T, dP^T of step i + 1 in flight with dV, dK of step i: also P^T and dS^T of step i held
  // rounded (kBM/8 registers): at D = 128 that passes the consumers' 240 registers (spills).
  static constexpr bool kOverlap = D == 64;
  static constexpr int kStages = 3;
  static constexpr int kSlabs = D / 64;
  static constexpr int kKVSlab = kBN * 128, kQSlab = kBM * 128;
  static constexpr int kKVBytes = kSlabs * kKVSlab;  // k or v
  static constexpr int kQBytes = kSlabs * kQSlab;    // q or do of a stage
  static constexpr int kRowBytes = kBM * 4;          // lse log2e or D of a stage's rows
  static constexpr int kStageBytes = 2 * kQBytes + 1024;  // q, do, lse log2e, D (1024-aligned)
  static constexpr int kBarriers = 1 + 2 * kStages;       // kv_full, full[], empty[]
  static constexpr int kSmem = 2 * kKVBytes + kStages * kStageBytes + 8 * kBarriers + 1024;
  static_assert(2 * kRowBytes <= 1024, "lse log2e and D fit the stage's last 1024 bytes");
  static_assert(kQSlab % 1024 == 0 && kKVSlab % 1024 == 0, "slabs on the swizzle period");
  static_assert(kBM / 16 * 2048 <= kQSlab, "dV's and dK's 16-row steps stay inside a slab");
  static_assert(kRowPad % kBM == 0, "a stage's rows never pass the workspace's padded rows");
  static_assert(kSmem <= 227 * 1024 && kSmem < (1 << 18), "shared memory; descriptor addresses never carry");
};

// The byte offset (>> 4, a descriptor's address field) of K-major k step kk in a tile of
// slabs of `slab` bytes.
__device__ __forceinline__ uint32_t k_step(int kk, int slab) { return ((kk / 4) * slab + (kk % 4) * 32) >> 4; }

template <int N>
__device__ __forceinline__ void fence_all(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(r[i]);
}

// The A fragments of the k steps of a following product from accumulator columns (wgmma.cuh:
// columns 16 kk .. 16 kk + 15 are x[8 kk .. 8 kk + 7]), rounded to T.
template <typename T, int N>
__device__ __forceinline__ void pack_a(uint32_t (&a)[N / 16][4], const float (&x)[N / 2]) {
#pragma unroll
  for (int kk = 0; kk < N / 16; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) a[kk][i] = pack2<T>(x[8 * kk + 2 * i], x[8 * kk + 2 * i + 1]);
}

// lse log2e (+inf where the row is past sq or sees no key) and D_i = do_i . o_i, a warp per row
// of [batch x heads][sq_pad].
template <typename T>
__global__ void __launch_bounds__(256) sdpa_bwd_rows_kernel(const Attn p, const int sq_pad, float* lse2,
                                                            float* delta) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 8 + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (row >= static_cast<int64_t>(p.batch) * p.heads * sq_pad) return;
  const int bh = static_cast<int>(row / sq_pad), i = static_cast<int>(row % sq_pad);
  const int b = bh / p.heads, h = bh % p.heads;
  float acc = 0.f, l2 = INFINITY;
  if (i < p.sq) {
    const T* orow = p.o.head<const T>(b, h) + static_cast<int64_t>(i) * p.o.ss;
    const T* dorow = p.dout.head<const T>(b, h) + static_cast<int64_t>(i) * p.dout.ss;
    for (int e = lane; e < p.dv; e += 32)
      acc = fmaf(to_float(dorow[static_cast<int64_t>(e) * p.dout.se]), to_float(orow[static_cast<int64_t>(e) * p.o.se]),
                 acc);
    acc = warp_reduce(acc, SumOp{});
    const float lse = p.lse.head<const float>(b, h)[static_cast<int64_t>(i) * p.lse.ss];
    if (lse != -INFINITY) l2 = lse * kLog2e;
  }
  if (lane == 0) {
    lse2[row] = l2;
    delta[row] = acc;
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    sdpa_bwd_dq_wgmma_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_do,
                             const __grid_constant__ CUtensorMap tm_k, const __grid_constant__ CUtensorMap tm_v,
                             const Attn p, const float* __restrict__ lse2_ws, const float* __restrict__ delta_ws,
                             const int sq_pad, const int m_blocks, const bool dq_pairs) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = DqWg<D>;
  constexpr int kBN = Tile::kBN, kStages = Tile::kStages;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t q_s = base, do_s = base + Tile::kQBytes;
  auto k_s = [&](int st) { return base + 2 * Tile::kQBytes + st * Tile::kStageBytes; };
  auto v_s = [&](int st) { return k_s(st) + Tile::kKVBytes; };
  const uint32_t bars = k_s(kStages);
  const uint32_t qdo_full = bars;
  auto full = [&](int st) { return bars + 8 * (1 + st); };
  auto empty = [&](int st) { return bars + 8 * (1 + kStages + st); };

  // A head's query blocks side by side (its k and v stay in L2), the last (under causal the
  // heaviest) first.
  const int bh = static_cast<int>(blockIdx.x) / m_blocks;
  const int mb = m_blocks - 1 - static_cast<int>(blockIdx.x) % m_blocks;
  const int b = bh / p.heads, h = bh % p.heads, kvh = h / p.group;
  const int m0 = mb * Tile::kBM;
  int lo, hi;
  key_range(p, m0, min(m0 + Tile::kBM, p.sq) - 1, lo, hi);
  const int t_lo = lo / kBN;
  const int n_tiles = hi > lo ? (hi + kBN - 1) / kBN - t_lo : 0;
  const int wg = static_cast<int>(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    mbar_init(qdo_full, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(full(st), 1);
      mbar_init(empty(st), 128 * kConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      mbar_arrive_expect_tx(qdo_full, 2 * Tile::kQBytes);
#pragma unroll
      for (int sl = 0; sl < Tile::kSlabs; ++sl) {
        tma_load_4d(q_s + sl * Tile::kQSlab, &tm_q, 64 * sl, m0, h, b, qdo_full);
        tma_load_4d(do_s + sl * Tile::kQSlab, &tm_do, 64 * sl, m0, h, b, qdo_full);
      }
      for (int it = 0; it < n_tiles; ++it) {
        const int st = it % kStages, fill = it / kStages, j0 = (t_lo + it) * kBN;
        if (fill > 0) mbar_wait(empty(st), (fill - 1) & 1);
        mbar_arrive_expect_tx(full(st), 2 * Tile::kKVBytes);
#pragma unroll
        for (int sl = 0; sl < Tile::kSlabs; ++sl) {
          tma_load_4d(k_s(st) + sl * Tile::kKVSlab, &tm_k, 64 * sl, j0, kvh, b, full(st));
          tma_load_4d(v_s(st) + sl * Tile::kKVSlab, &tm_v, 64 * sl, j0, kvh, b, full(st));
        }
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
  float row_l2[2], row_d[2];  // rows < m0 + 128 <= sq_pad
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t idx = static_cast<int64_t>(bh) * sq_pad + rows[r];
    row_l2[r] = lse2_ws[idx];
    row_d[r] = delta_ws[idx];
  }
  const uint64_t desc_q = desc_k_major(q_s + c * 64 * 128);
  const uint64_t desc_do = desc_k_major(do_s + c * 64 * 128);
  const uint64_t desc_k = desc_k_major(k_s(0));
  const uint64_t desc_v = desc_k_major(v_s(0));
  const uint64_t desc_kn = desc_n_major(k_s(0), Tile::kKVSlab);
  constexpr uint32_t kStageStep = Tile::kStageBytes >> 4;

  float dq[D / 2];           // dQ: 64 x D of this warpgroup
  float s[kBN / 2];          // S, then dS in f32: 64 x kBN
  float dp[kBN / 2];         // dP
  uint32_t da[kBN / 16][4];  // dS rounded: the A fragments of dQ's kBN / 16 k steps
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dq[i] = 0.f;
#pragma unroll
  for (int i = 0; i < kBN / 2; ++i) s[i] = dp[i] = 0.f;

  // S = Q K^T and dP = dO V^T of the tile in stage st.
  auto issue_sdp = [&](int st) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t qoff = k_step(kk, Tile::kQSlab), koff = st * kStageStep + k_step(kk, Tile::kKVSlab);
      wgmma_ss<T, kBN, 0>(s, desc_q + qoff, desc_k + koff, kk > 0 ? 1u : 0u);
      wgmma_ss<T, kBN, 0>(dp, desc_do + qoff, desc_v + koff, kk > 0 ? 1u : 0u);
    }
  };
  // dQ += dS K: k step kk is keys 16 kk .. 16 kk + 15, k rows 16 kk on (2048 bytes, 128 in the
  // address field).
  auto issue_dq = [&](int st) {
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) wgmma_rs<T, D, 1>(dq, da[kk], desc_kn + (st * kStageStep + kk * 128), 1u);
  };
  // s becomes dS = P (dP - D) of the tile at keys j0; P is 0 where the rule hides the key.
  auto form_ds = [&](int j0) {
    const bool whole = whole_tile(p, j0, kBN, warp_row0);
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        float pv = ex2_approx_ftz(fmaf(s[4 * n + e], scale_log2, -row_l2[r]));
        if (!whole && !visible(p, rows[r], j0 + 8 * n + 2 * t + (e & 1))) pv = 0.f;
        s[4 * n + e] = pv * (dp[4 * n + e] - row_d[r]);
      }
  };

  if (n_tiles > 0) {
    mbar_wait(qdo_full, 0);
    mbar_wait(full(0), 0);
    wgmma_fence();
    issue_sdp(0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_all(s);
    fence_all(dp);
    form_ds(t_lo * kBN);
    // Visit it issues S, dP of tile it and dQ of tile it - 1, then forms dS of tile it while
    // dQ runs. The wait for that dQ opens the next visit (the forward's arrangement).
    for (int it = 1; it < n_tiles; ++it) {
      const int st = it % kStages, prev = (it - 1) % kStages;
      wgmma_wait<0>();  // dQ of tile it - 2 (if any): da may be written, its stage released
      fence_all(dq);
      fence_all(s);
      if (it >= 2) mbar_arrive(empty((it - 2) % kStages));
      pack_a<T, kBN>(da, s);
      mbar_wait(full(st), (it / kStages) & 1);
      wgmma_fence();
      issue_sdp(st);
      wgmma_commit();
      issue_dq(prev);
      wgmma_commit();
      wgmma_wait<1>();  // S and dP of tile it complete; dQ of tile it - 1 may still run
      fence_all(s);
      fence_all(dp);
      form_ds((t_lo + it) * kBN);
    }
    wgmma_wait<0>();
    fence_all(dq);
    fence_all(s);
    pack_a<T, kBN>(da, s);
    wgmma_fence();
    issue_dq((n_tiles - 1) % kStages);
    wgmma_commit();
    wgmma_wait<0>();
    fence_all(dq);
    // The last two stages need no release: the producer loads nothing more.
  }

  T* dqg = p.dq.head<T>(b, h);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (rows[r] >= p.sq) continue;
    T* row = dqg + static_cast<int64_t>(rows[r]) * p.dq.ss;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      store2<T>(row, p.dq.se, 8 * j + 2 * t, dq[4 * j + 2 * r] * p.scale, dq[4 * j + 2 * r + 1] * p.scale, dq_pairs);
  }
#endif
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    sdpa_bwd_dkv_wgmma_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_do,
                              const __grid_constant__ CUtensorMap tm_k, const __grid_constant__ CUtensorMap tm_v,
                              const Attn p, const float* __restrict__ lse2_ws, const float* __restrict__ delta_ws,
                              const int sq_pad, const int n_blocks, const bool kv_pairs) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tile = DkvWg<D>;
  constexpr int kBM = Tile::kBM, kStages = Tile::kStages;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  unsigned char* const base_ptr = smem + (base - smem_addr(smem));
  const uint32_t k_s = base, v_s = base + Tile::kKVBytes;
  auto q_s = [&](int st) { return base + 2 * Tile::kKVBytes + st * Tile::kStageBytes; };
  auto do_s = [&](int st) { return q_s(st) + Tile::kQBytes; };
  auto rows_s = [&](int st) { return q_s(st) + 2 * Tile::kQBytes; };  // lse log2e, then D
  const uint32_t bars = q_s(kStages);
  const uint32_t kv_full = bars;
  auto full = [&](int st) { return bars + 8 * (1 + st); };
  auto empty = [&](int st) { return bars + 8 * (1 + kStages + st); };

  // A kv head's key blocks side by side (the group's q and do stay in L2), the first (under
  // causal the heaviest) first.
  const int bkv = static_cast<int>(blockIdx.x) / n_blocks, nb = static_cast<int>(blockIdx.x) % n_blocks;
  const int b = bkv / p.kv_heads, kvh = bkv % p.kv_heads;
  const int j0 = nb * Tile::kBN;
  int lo, hi;
  query_range(p, j0, min(j0 + Tile::kBN, p.sk) - 1, lo, hi);
  const int q_first = lo / kBM, q_tiles = hi > lo ? (hi + kBM - 1) / kBM - q_first : 0;
  const int steps = p.group * q_tiles;
  const int wg = static_cast<int>(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    mbar_init(kv_full, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(full(st), 1);
      mbar_init(empty(st), 128 * kConsumers);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0 && steps > 0) {
      mbar_arrive_expect_tx(kv_full, 2 * Tile::kKVBytes);
#pragma unroll
      for (int sl = 0; sl < Tile::kSlabs; ++sl) {
        tma_load_4d(k_s + sl * Tile::kKVSlab, &tm_k, 64 * sl, j0, kvh, b, kv_full);
        tma_load_4d(v_s + sl * Tile::kKVSlab, &tm_v, 64 * sl, j0, kvh, b, kv_full);
      }
      for (int it = 0; it < steps; ++it) {
        const int st = it % kStages, fill = it / kStages;
        const int h = kvh * p.group + it / q_tiles, m0 = (q_first + it % q_tiles) * kBM;
        if (fill > 0) mbar_wait(empty(st), (fill - 1) & 1);
        mbar_arrive_expect_tx(full(st), 2 * Tile::kQBytes + 2 * Tile::kRowBytes);
#pragma unroll
        for (int sl = 0; sl < Tile::kSlabs; ++sl) {
          tma_load_4d(q_s(st) + sl * Tile::kQSlab, &tm_q, 64 * sl, m0, h, b, full(st));
          tma_load_4d(do_s(st) + sl * Tile::kQSlab, &tm_do, 64 * sl, m0, h, b, full(st));
        }
        const int64_t row0 = (static_cast<int64_t>(b) * p.heads + h) * sq_pad + m0;
        bulk_load(rows_s(st), lse2_ws + row0, Tile::kRowBytes, full(st));
        bulk_load(rows_s(st) + Tile::kRowBytes, delta_ws + row0, Tile::kRowBytes, full(st));
      }
    }
    return;
  }

  setmaxnreg_inc<kConsumerRegs>();
  const int c = wg - 1;  // keys 64 c .. 64 c + 63 of the block
  const int tid = static_cast<int>(threadIdx.x) % 128, warp = tid / 32, g = (tid % 32) / 4, t = tid % 4;
  const int key0 = j0 + 64 * c + 16 * warp;
  const int keys[2] = {key0 + g, key0 + g + 8};
  const float scale_log2 = p.scale * kLog2e;
  const uint64_t desc_k = desc_k_major(k_s + c * 64 * 128);
  const uint64_t desc_v = desc_k_major(v_s + c * 64 * 128);
  const uint64_t desc_q = desc_k_major(q_s(0));
  const uint64_t desc_do = desc_k_major(do_s(0));
  const uint64_t desc_qn = desc_n_major(q_s(0), Tile::kQSlab);
  const uint64_t desc_don = desc_n_major(do_s(0), Tile::kQSlab);
  constexpr uint32_t kStageStep = Tile::kStageBytes >> 4;

  float dk[D / 2], dv[D / 2];  // dK, dV: 64 keys x D of this warpgroup
  float s[kBM / 2];            // S^T, then P^T: 64 keys x kBM queries
  float dp[kBM / 2];           // dP^T, then dS^T
  uint32_t pa[kBM / 16][4], da[kBM / 16][4];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dk[i] = dv[i] = 0.f;
#pragma unroll
  for (int i = 0; i < kBM / 2; ++i) s[i] = dp[i] = 0.f;

  auto issue_sdp = [&](int st) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t koff = k_step(kk, Tile::kKVSlab), qoff = st * kStageStep + k_step(kk, Tile::kQSlab);
      wgmma_ss<T, kBM, 0>(s, desc_k + koff, desc_q + qoff, kk > 0 ? 1u : 0u);
      wgmma_ss<T, kBM, 0>(dp, desc_v + koff, desc_do + qoff, kk > 0 ? 1u : 0u);
    }
  };
  // dV += P^T dO and dK += dS^T Q: k step kk is queries 16 kk .. 16 kk + 15 (2048 bytes).
  auto issue_dkv = [&](int st) {
#pragma unroll
    for (int kk = 0; kk < kBM / 16; ++kk) {
      const uint32_t off = st * kStageStep + kk * 128;
      wgmma_rs<T, D, 1>(dv, pa[kk], desc_don + off, 1u);
      wgmma_rs<T, D, 1>(dk, da[kk], desc_qn + off, 1u);
    }
  };
  // s becomes P^T and dp dS^T = P^T (dP^T - D) of the queries at m0 (columns: lse log2e and D
  // from the stage).
  auto form_ds = [&](int st, int m0) {
    const float* l2s = reinterpret_cast<const float*>(base_ptr + (rows_s(st) - base));
    const float* ds = l2s + kBM;
    const bool whole = key0 + 15 < p.sk && (!p.causal || key0 + 15 <= m0) &&
                       (p.window == 0 || key0 > m0 + kBM - 1 - p.window);
#pragma unroll
    for (int n = 0; n < kBM / 8; ++n) {
      const int col = 8 * n + 2 * t;
      const float2 l2 = *reinterpret_cast<const float2*>(l2s + col);
      const float2 dd = *reinterpret_cast<const float2*>(ds + col);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1, x = e & 1;
        float pv = ex2_approx_ftz(fmaf(s[4 * n + e], scale_log2, -(x ? l2.y : l2.x)));
        if (!whole && !visible(p, m0 + col + x, keys[r])) pv = 0.f;
        s[4 * n + e] = pv;
        dp[4 * n + e] = pv * (dp[4 * n + e] - (x ? dd.y : dd.x));
      }
    }
  };

  if (steps > 0 && !Tile::kOverlap) {
    // One step at a time: the two consumers' products interleave on the tensor cores.
    mbar_wait(kv_full, 0);
    for (int it = 0; it < steps; ++it) {
      const int st = it % kStages, m0 = (q_first + it % q_tiles) * kBM;
      mbar_wait(full(st), (it / kStages) & 1);
      wgmma_fence();
      issue_sdp(st);
      wgmma_commit();
      wgmma_wait<0>();
      fence_all(s);
      fence_all(dp);
      form_ds(st, m0);
      pack_a<T, kBM>(pa, s);
      pack_a<T, kBM>(da, dp);
      wgmma_fence();
      issue_dkv(st);
      wgmma_commit();
      wgmma_wait<0>();
      fence_all(dk);
      fence_all(dv);
      mbar_arrive(empty(st));
    }
  } else if (steps > 0) {
    mbar_wait(kv_full, 0);
    mbar_wait(full(0), 0);
    wgmma_fence();
    issue_sdp(0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_all(s);
    fence_all(dp);
    form_ds(0, q_first * kBM);
    // Step it issues S^T, dP^T of step it and dV, dK of step it - 1, then forms P^T and dS^T of
    // step it while dV and dK run (the dq kernel's arrangement).
    for (int it = 1; it < steps; ++it) {
      const int st = it % kStages, prev = (it - 1) % kStages;
      wgmma_wait<0>();  // dV, dK of step it - 2 (if any): pa and da may be written, its stage released
      fence_all(dk);
      fence_all(dv);
      fence_all(s);
      fence_all(dp);
      if (it >= 2) mbar_arrive(empty((it - 2) % kStages));
      pack_a<T, kBM>(pa, s);
      pack_a<T, kBM>(da, dp);
      mbar_wait(full(st), (it / kStages) & 1);
      wgmma_fence();
      issue_sdp(st);
      wgmma_commit();
      issue_dkv(prev);
      wgmma_commit();
      wgmma_wait<1>();  // S^T and dP^T of step it complete; dV, dK of step it - 1 may still run
      fence_all(s);
      fence_all(dp);
      form_ds(st, (q_first + it % q_tiles) * kBM);
    }
    wgmma_wait<0>();
    fence_all(dk);
    fence_all(dv);
    fence_all(s);
    fence_all(dp);
    pack_a<T, kBM>(pa, s);
    pack_a<T, kBM>(da, dp);
    wgmma_fence();
    issue_dkv((steps - 1) % kStages);
    wgmma_commit();
    wgmma_wait<0>();
    fence_all(dk);
    fence_all(dv);
    // The last two stages need no release: the producer loads nothing more.
  }

  T* dkg = p.dk.head<T>(b, kvh);
  T* dvg = p.dv_out.head<T>(b, kvh);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (keys[r] >= p.sk) continue;
    T* dk_row = dkg + static_cast<int64_t>(keys[r]) * p.dk.ss;
    T* dv_row = dvg + static_cast<int64_t>(keys[r]) * p.dv_out.ss;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      store2<T>(dk_row, p.dk.se, 8 * j + 2 * t, dk[4 * j + 2 * r] * p.scale, dk[4 * j + 2 * r + 1] * p.scale,
                kv_pairs);
      store2<T>(dv_row, p.dv_out.se, 8 * j + 2 * t, dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1], kv_pairs);
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side.

int64_t padded_rows(const Attn& a) { return round_up(a.sq, kRowPad); }

template <typename T, int D>
Status launch(const CudaDevice& device, const Attn& a, float* ws) {
  using Dq = DqWg<D>;
  using Dkv = DkvWg<D>;
  const int64_t sq_pad = padded_rows(a);
  const int64_t heads = int64_t{a.batch} * a.heads;
  const int64_t rows_blocks = ceil_div(heads * sq_pad, 8);
  const int64_t m_blocks = ceil_div(a.sq, Dq::kBM), n_blocks = ceil_div(a.sk, Dkv::kBN);
  const int64_t dq_blocks = m_blocks * heads, dkv_blocks = n_blocks * a.batch * a.kv_heads;
  const int64_t most = std::max({rows_blocks, dq_blocks, dkv_blocks});
  if (most > INT_MAX) return Status::unsupported("cuda sdpa_bwd: " + std::to_string(most) + " blocks exceed the grid");
  auto map = [&](const Operand& x, int64_t rows, int64_t n_heads, uint32_t box) {
    return operand_map(std::is_same_v<T, __nv_bfloat16> ? DType::bf16 : DType::f16, x, D, rows, n_heads, a.batch,
                       box);
  };
  auto q_dq = map(a.q, a.sq, a.heads, Dq::kBM);
  auto do_dq = map(a.dout, a.sq, a.heads, Dq::kBM);
  auto k_dq = map(a.k, a.sk, a.kv_heads, Dq::kBN);
  auto v_dq = map(a.v, a.sk, a.kv_heads, Dq::kBN);
  auto q_kv = map(a.q, a.sq, a.heads, Dkv::kBM);
  auto do_kv = map(a.dout, a.sq, a.heads, Dkv::kBM);
  auto k_kv = map(a.k, a.sk, a.kv_heads, Dkv::kBN);
  auto v_kv = map(a.v, a.sk, a.kv_heads, Dkv::kBN);
  for (const auto* m : {&q_dq, &do_dq, &k_dq, &v_dq, &q_kv, &do_kv, &k_kv, &v_kv})
    if (!*m) return m->status();
  float* lse2 = ws;
  float* delta = ws + heads * sq_pad;

  sdpa_bwd_rows_kernel<T><<<static_cast<unsigned>(rows_blocks), 256, 0, device.stream()>>>(
      a, static_cast<int>(sq_pad), lse2, delta);
  DNNB_CUDA_CHECK_LAUNCH();
  auto dq_kernel = sdpa_bwd_dq_wgmma_kernel<T, D>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(dq_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Dq::kSmem));
  dq_kernel<<<static_cast<unsigned>(dq_blocks), kThreads, Dq::kSmem, device.stream()>>>(
      *q_dq, *do_dq, *k_dq, *v_dq, a, lse2, delta, static_cast<int>(sq_pad), static_cast<int>(m_blocks),
      pair_rows(a.dq));
  DNNB_CUDA_CHECK_LAUNCH();
  auto dkv_kernel = sdpa_bwd_dkv_wgmma_kernel<T, D>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(dkv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Dkv::kSmem));
  dkv_kernel<<<static_cast<unsigned>(dkv_blocks), kThreads, Dkv::kSmem, device.stream()>>>(
      *q_kv, *do_kv, *k_kv, *v_kv, a, lse2, delta, static_cast<int>(sq_pad), static_cast<int>(n_blocks),
      pair_rows(a.dk) && pair_rows(a.dv_out));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

}  // namespace

size_t sdpa_bwd_wgmma_workspace(const Attn& a) {
  return 2 * sizeof(float) * static_cast<size_t>(a.batch) * static_cast<size_t>(a.heads) *
         static_cast<size_t>(padded_rows(a));
}

bool sdpa_bwd_wgmma_applies(const CudaDevice& device, const Attn& a, DType dtype, const void* workspace) {
  static const bool enabled = [] {
    const char* env = std::getenv("DNNB_CUDA_SDPA_BWD_WGMMA");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  if (!enabled || (dtype != DType::bf16 && dtype != DType::f16)) return false;
  if (a.d != a.dv || (a.d != 64 && a.d != 128)) return false;
  if (a.mask.data != nullptr || a.softcap > 0.f || !(a.scale > 0.f)) return false;
  if (!aligned_to(workspace, 16)) return false;
  if (!tma_operand(a.q, a.sq, a.heads, a.batch) || !tma_operand(a.dout, a.sq, a.heads, a.batch) ||
      !tma_operand(a.k, a.sk, a.kv_heads, a.batch) || !tma_operand(a.v, a.sk, a.kv_heads, a.batch))
    return false;
  return is_sm90(device);
}

Status launch_sdpa_bwd_wgmma(const CudaDevice& device, const Attn& a, DType dtype, void* workspace) {
  if (!sdpa_bwd_wgmma_applies(device, a, dtype, workspace))
    return Status::unsupported("cuda sdpa_bwd: the wgmma kernels do not take this problem");
  float* ws = static_cast<float*>(workspace);
  if (dtype == DType::bf16)
    return a.d == 64 ? launch<__nv_bfloat16, 64>(device, a, ws) : launch<__nv_bfloat16, 128>(device, a, ws);
  return a.d == 64 ? launch<__half, 64>(device, a, ws) : launch<__half, 128>(device, a, ws);
}

}  // namespace dnnb::cuda_kernels::sdpa
