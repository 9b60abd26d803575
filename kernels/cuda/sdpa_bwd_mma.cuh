// The f16/bf16 attention backward on the tensor cores (mma.sync m16n8k16, f32 accumulation),
// for D in {64, 128} and Dv in {32, 64, 128}; launched by sdpa_bwd.cu. The same two kernels as
// the f32 backward (sdpa_bwd.cuh), no atomics, each output rounded once:
//   dq kernel: one block of 4 warps per (batch, head, 64 query rows), warp w owning rows
//     16 w .. 16 w + 15 as in the forward (sdpa_mma.cuh). It stores D_i = do_i . o_i for the
//     next kernel, then per 64-key tile (double-buffered by cp.async): S = Q K^T and
//     dP = dO V^T in registers, p = exp(s - lse), dS = p (dP - D) (times the softcap's
//     1 - tanh^2), and dQ += dS K with dS rounded to the dtype as the A operand straight from
//     the accumulators (k read with ldmatrix.trans).
//   dk/dv kernel: one block of 4 warps per (batch, kv head, 64 keys), warp w owning keys
//     16 w .. 16 w + 15. Over the group's query heads and the query tiles that see these keys
//     (kBM rows a step, double-buffered): S^T = K Q^T and dP^T = V dO^T, P^T and dS^T as above
//     (lse and D per column, from shared memory), dV += P^T dO and dK += dS^T Q with P^T and
//     dS^T rounded to the dtype as A operands. dk and dv stay in registers over the group.
// The score rule and tile skipping are sdpa_common.cuh's; tiles and loads are attention_mma.cuh's.
#pragma once
#include "kernels/cuda/sdpa_mma.cuh"

namespace dnnb::cuda_kernels::sdpa {

// Head dims the tensor-core backward takes (the dk/dv kernel holds 16 x (D + Dv) f32 per warp).
inline bool bwd_mma_head_dims(int d, int dv) { return (d == 64 || d == 128) && (dv == 32 || dv == 64 || dv == 128); }

template <int D, int DV>
struct DqTile {
  static constexpr int kBN = 64;
  static constexpr int kQBytes = kMmaRows * D * 2, kDoBytes = kMmaRows * DV * 2;
  static constexpr int kKBytes = kBN * D * 2, kVBytes = kBN * DV * 2;
  static constexpr int kStageBytes = kKBytes + kVBytes;
  static constexpr int kDeltaOffset = kQBytes + kDoBytes + 2 * kStageBytes;
  static constexpr int kSmem = kDeltaOffset + kMmaRows * 4;
};

template <int D, int DV>
struct DkvTile {
  static constexpr int kBN = 64;                      // keys per block
  static constexpr int kBM = D + DV > 192 ? 32 : 64;  // query rows per step (registers)
  static constexpr int kKBytes = kBN * D * 2, kVBytes = kBN * DV * 2;
  static constexpr int kQBytes = kBM * D * 2, kDoBytes = kBM * DV * 2;
  static constexpr int kStageBytes = kQBytes + kDoBytes + 2 * kBM * 4;  // q, do, lse log2e, D
  static constexpr int kSmem = kKBytes + kVBytes + 2 * kStageBytes;
};

// Which operands the kernels may copy with cp.async (attention_operand.cuh's async_rows).
struct BwdMmaPaths {
  bool q_async = false, k_async = false, v_async = false, do_async = false;
};

inline BwdMmaPaths bwd_mma_paths(const Attn& a) {
  return {async_rows(a.q), async_rows(a.k), async_rows(a.v), async_rows(a.dout)};
}

// The score of (i, j) from its dot product; whole: the tile needs no visibility rule or mask.
template <typename T>
__device__ __forceinline__ float score_of(const Attn& p, float dot, int i, int j, bool whole, float& dcap) {
  if (!whole) return final_score<T>(p, dot, i, j, dcap);
  return capped_score(p, dot, dcap);
}

// p = exp(s - lse) given lse log2e (-inf: the row sees no key, p = 0).
__device__ __forceinline__ float prob(float s, float lse_log2) {
  return lse_log2 == -INFINITY ? 0.f : exp2f(fmaf(s, kLog2e, -lse_log2));
}

template <typename T, int D, int DV>
__global__ void __launch_bounds__(kMmaThreads)
    sdpa_bwd_dq_mma_kernel(const Attn p, const BwdMmaPaths paths, bool dq_pairs, int m_blocks) {
  using Tile = DqTile<D, DV>;
  constexpr int kBN = Tile::kBN;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int mb = m_blocks - 1 - static_cast<int>(blockIdx.x) / (p.batch * p.heads);
  const int bh = static_cast<int>(blockIdx.x) % (p.batch * p.heads);
  const int b = bh / p.heads, h = bh % p.heads, kvh = h / p.group;
  const int m0 = mb * kMmaRows, row0 = m0 + warp * 16;

  const uint16_t* kg = p.k.head<const uint16_t>(b, kvh);
  const uint16_t* vg = p.v.head<const uint16_t>(b, kvh);
  unsigned char* q_tile = smem;
  unsigned char* do_tile = smem + Tile::kQBytes;
  auto k_tile = [&](int stage) { return smem + Tile::kQBytes + Tile::kDoBytes + stage * Tile::kStageBytes; };
  auto load_kv = [&](int stage, int j0) {
    load_tile<kBN, D>(k_tile(stage), kg, p.k.ss, p.k.se, j0, p.sk, paths.k_async);
    load_tile<kBN, DV>(k_tile(stage) + Tile::kKBytes, vg, p.v.ss, p.v.se, j0, p.sk, paths.v_async);
  };
  float* delta_s = reinterpret_cast<float*>(smem + Tile::kDeltaOffset);

  int lo, hi;
  key_range(p, m0, min(m0 + kMmaRows, p.sq) - 1, lo, hi);
  const int t_lo = lo / kBN, t_hi = hi > lo ? (hi + kBN - 1) / kBN : t_lo;
  load_tile<kMmaRows, D>(q_tile, p.q.head<const uint16_t>(b, h), p.q.ss, p.q.se, m0, p.sq, paths.q_async);
  load_tile<kMmaRows, DV>(do_tile, p.dout.head<const uint16_t>(b, h), p.dout.ss, p.dout.se, m0, p.sq, paths.do_async);
  if (t_lo < t_hi) load_kv(0, t_lo * kBN);
  cp_async_commit();

  // D_i of the warp's rows: the 32 lanes across Dv, from global memory (the copies above in flight).
  {
    const T* og = p.o.head<const T>(b, h);
    const T* dog = p.dout.head<const T>(b, h);
    for (int r = 0; r < 16; ++r) {
      const int i = row0 + r;
      float acc = 0.f;
      if (i < p.sq)
        for (int e = lane; e < p.dv; e += 32)
          acc = fmaf(to_float(dog[static_cast<int64_t>(i) * p.dout.ss + static_cast<int64_t>(e) * p.dout.se]),
                     to_float(og[static_cast<int64_t>(i) * p.o.ss + static_cast<int64_t>(e) * p.o.se]), acc);
      acc = warp_reduce(acc, SumOp{});
      if (lane == 0) {
        delta_s[warp * 16 + r] = acc;
        if (i < p.sq) p.delta[(static_cast<int64_t>(b) * p.heads + h) * p.sq + i] = acc;
      }
    }
    __syncwarp();
  }
  float delta_r[2], lse2_r[2];  // rows g and g + 8 of the warp
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + g + 8 * r;
    delta_r[r] = delta_s[warp * 16 + g + 8 * r];
    lse2_r[r] = i < p.sq ? p.lse.head<const float>(b, h)[static_cast<int64_t>(i) * p.lse.ss] * kLog2e : -INFINITY;
  }

  float dq[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[n][e] = 0.f;
  const uint32_t q_s = smem_addr(q_tile), do_s = smem_addr(do_tile);
  for (int tile = t_lo; tile < t_hi; ++tile) {
    const int stage = (tile - t_lo) & 1;
    if (tile + 1 < t_hi)
      load_kv(stage ^ 1, (tile + 1) * kBN);  // its stage was last read before the barrier ending tile - 1
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const uint32_t k_s = smem_addr(k_tile(stage)), v_s = k_s + Tile::kKBytes;
    float s[kBN / 8][4], dp[kBN / 8][4];
    mma_rows_rows<T, D>(s, q_s, k_s, warp, lane);
    mma_rows_rows<T, DV>(dp, do_s, v_s, warp, lane);
    const int j0 = tile * kBN;
    const bool whole = p.mask.data == nullptr && j0 + kBN <= p.sk && (!p.causal || j0 + kBN - 1 <= row0) &&
                       (p.window == 0 || j0 > row0 + 15 - p.window);
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        float dcap;
        const float sc = score_of<T>(p, s[n][e], row0 + g + 8 * r, j0 + 8 * n + 2 * t + (e & 1), whole, dcap);
        s[n][e] = prob(sc, lse2_r[r]) * (dp[n][e] - delta_r[r]) * dcap;  // dS
      }
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t af[4];
      a_from_acc<T>(af, s, kk);
      mma_b_cols<T, D>(dq, af, k_s, kk, lane);  // k's rows are the keys: k_outer
    }
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }
  cp_async_wait<0>();

  T* dqg = p.dq.head<T>(b, h);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + g + 8 * r;
    if (i >= p.sq) continue;
    T* row = dqg + static_cast<int64_t>(i) * p.dq.ss;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      store2<T>(row, p.dq.se, n * 8 + 2 * t, dq[n][2 * r] * p.scale, dq[n][2 * r + 1] * p.scale, dq_pairs);
  }
}

template <typename T, int D, int DV>
__global__ void __launch_bounds__(kMmaThreads)
    sdpa_bwd_dkv_mma_kernel(const Attn p, const BwdMmaPaths paths, bool kv_pairs, int n_blocks) {
  using Tile = DkvTile<D, DV>;
  constexpr int kBM = Tile::kBM;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int nb = n_blocks - 1 - static_cast<int>(blockIdx.x) / (p.batch * p.kv_heads);
  const int bkv = static_cast<int>(blockIdx.x) % (p.batch * p.kv_heads);
  const int b = bkv / p.kv_heads, kvh = bkv % p.kv_heads;
  const int j0 = nb * Tile::kBN, key0 = j0 + warp * 16;  // the warp's first key

  unsigned char* k_tile = smem;
  unsigned char* v_tile = smem + Tile::kKBytes;
  auto stage_base = [&](int stage) { return smem + Tile::kKBytes + Tile::kVBytes + stage * Tile::kStageBytes; };
  load_tile<Tile::kBN, D>(k_tile, p.k.head<const uint16_t>(b, kvh), p.k.ss, p.k.se, j0, p.sk, paths.k_async);
  load_tile<Tile::kBN, DV>(v_tile, p.v.head<const uint16_t>(b, kvh), p.v.ss, p.v.se, j0, p.sk, paths.v_async);

  // Steps: the group's heads, each over the query tiles [q_first, q_first + q_tiles).
  int lo, hi;
  query_range(p, j0, min(j0 + Tile::kBN, p.sk) - 1, lo, hi);
  const int q_first = lo / kBM, q_tiles = hi > lo ? (hi + kBM - 1) / kBM - q_first : 0;
  const int steps = p.group * q_tiles;
  auto step_head = [&](int step) { return kvh * p.group + step / q_tiles; };
  auto step_m0 = [&](int step) { return (q_first + step % q_tiles) * kBM; };
  auto load_step = [&](int stage, int step) {
    const int h = step_head(step), m0 = step_m0(step);
    unsigned char* base = stage_base(stage);
    load_tile<kBM, D>(base, p.q.head<const uint16_t>(b, h), p.q.ss, p.q.se, m0, p.sq, paths.q_async);
    load_tile<kBM, DV>(base + Tile::kQBytes, p.dout.head<const uint16_t>(b, h), p.dout.ss, p.dout.se, m0, p.sq,
                       paths.do_async);
    float* lse2 = reinterpret_cast<float*>(base + Tile::kQBytes + Tile::kDoBytes);
    float* delta = lse2 + kBM;
    const float* lg = p.lse.head<const float>(b, h);
    const float* dg = p.delta + (static_cast<int64_t>(b) * p.heads + h) * p.sq;
    for (int c = threadIdx.x; c < kBM; c += kMmaThreads) {
      const int i = m0 + c;
      lse2[c] = i < p.sq ? lg[static_cast<int64_t>(i) * p.lse.ss] * kLog2e : -INFINITY;
      delta[c] = i < p.sq ? dg[i] : 0.f;
    }
  };
  if (steps > 0) load_step(0, 0);
  cp_async_commit();

  float dk[D / 8][4], dv[DV / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = 0.f;
#pragma unroll
  for (int n = 0; n < DV / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dv[n][e] = 0.f;
  const uint32_t k_s = smem_addr(k_tile), v_s = smem_addr(v_tile);
  for (int step = 0; step < steps; ++step) {
    const int stage = step & 1;
    if (step + 1 < steps) load_step(stage ^ 1, step + 1);  // its stage was last read before the barrier ending step - 1
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    unsigned char* base = stage_base(stage);
    const uint32_t q_s = smem_addr(base), do_s = q_s + Tile::kQBytes;
    const float* lse2 = reinterpret_cast<const float*>(base + Tile::kQBytes + Tile::kDoBytes);
    const float* delta = lse2 + kBM;
    const int m0 = step_m0(step);

    // Accumulator (n, e): key key0 + g + 8 (e / 2), query m0 + 8 n + 2 t + e % 2.
    float st[kBM / 8][4], dpt[kBM / 8][4];
    mma_rows_rows<T, D>(st, k_s, q_s, warp, lane);
    mma_rows_rows<T, DV>(dpt, v_s, do_s, warp, lane);
    const bool whole = p.mask.data == nullptr && key0 + 15 < p.sk && (!p.causal || key0 + 15 <= m0) &&
                       (p.window == 0 || key0 > m0 + kBM - 1 - p.window);
#pragma unroll
    for (int n = 0; n < kBM / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 8 * n + 2 * t + (e & 1);
        float dcap;
        const float sc = score_of<T>(p, st[n][e], m0 + c, key0 + g + 8 * (e >> 1), whole, dcap);
        const float pv = prob(sc, lse2[c]);
        st[n][e] = pv;                                   // P^T
        dpt[n][e] = pv * (dpt[n][e] - delta[c]) * dcap;  // dS^T
      }
#pragma unroll
    for (int kk = 0; kk < kBM / 16; ++kk) {
      uint32_t af[4];
      a_from_acc<T>(af, st, kk);
      mma_b_cols<T, DV>(dv, af, do_s, kk, lane);  // do's rows are the queries: k_outer
      a_from_acc<T>(af, dpt, kk);
      mma_b_cols<T, D>(dk, af, q_s, kk, lane);
    }
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }
  cp_async_wait<0>();

  T* dkg = p.dk.head<T>(b, kvh);
  T* dvg = p.dv_out.head<T>(b, kvh);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = key0 + g + 8 * r;
    if (j >= p.sk) continue;
    T* dk_row = dkg + static_cast<int64_t>(j) * p.dk.ss;
    T* dv_row = dvg + static_cast<int64_t>(j) * p.dv_out.ss;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      store2<T>(dk_row, p.dk.se, n * 8 + 2 * t, dk[n][2 * r] * p.scale, dk[n][2 * r + 1] * p.scale, kv_pairs);
#pragma unroll
    for (int n = 0; n < DV / 8; ++n)
      store2<T>(dv_row, p.dv_out.se, n * 8 + 2 * t, dv[n][2 * r], dv[n][2 * r + 1], kv_pairs);
  }
}

}  // namespace dnnb::cuda_kernels::sdpa
