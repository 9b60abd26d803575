// The f32-FMA attention backward kernels (launched by sdpa_bwd.cu), on the tiles and thread
// layout of sdpa_f32.cuh (any dtype, loaded to f32; D, Dv <= 256); each output written once,
// rounded once, with no atomics (deterministic):
//   dq kernel: one block per (batch, head, 32 query rows): D_i = do_i . o_i for its rows, and
//     n_i = 1 / sum_j exp(s_j - lse_i) over a first pass of the visible key tiles (both stored
//     to the workspace for the next kernel), then over the same tiles S, P = n_i exp(s - lse),
//     dP, dS = P (dP - D) (times the softcap's 1 - tanh^2) and dq += dS k in registers.
//     n_i makes each row of P sum to 1 whatever the f32 rounding of the scores recomputed here
//     against the forward's: with scores of order 100 one rounding of s shifts every p by
//     about 1e-5 relative, which dq would carry undivided.
//   dk/dv kernel: one block per (batch, kv head, 32 keys): over the group's query heads and the
//     query tiles that see these keys, S, P, dP, dS again and dv += P^T do, dk += dS^T q in
//     registers; so dk and dv sum over the group inside the block.
// p = n_i exp2(s log2e - lse log2e) from the forward's lse (sdpa_common.cuh).
#pragma once
#include "kernels/cuda/sdpa_f32.cuh"

namespace dnnb::cuda_kernels::sdpa {

// Shared memory of both kernels: q [32][D+1], do [32][Dv+1], k [32][D+1], v [32][Dv+1], dS and
// P [32][33], lse, D and n [32] floats.
inline size_t bwd_smem_bytes(int d, int dv) {
  return sizeof(float) * (static_cast<size_t>(kTile) * (2 * (d + 1) + 2 * (dv + 1) + 2 * kScoreLd + 3));
}

struct BwdSmem {
  float *qs, *dos, *ks, *vs, *ds, *ps, *lse, *delta, *norm;
  __device__ explicit BwdSmem(float* base, int d, int dv) {
    qs = base;
    dos = qs + kTile * (d + 1);
    ks = dos + kTile * (dv + 1);
    vs = ks + kTile * (d + 1);
    ds = vs + kTile * (dv + 1);
    ps = ds + kTile * kScoreLd;
    lse = ps + kTile * kScoreLd;
    delta = lse + kTile;
    norm = delta + kTile;
  }
};

// Row a (query i, its lse, D and n) against keys j0 + sub + 8 k of the tiles in shared memory: p
// and dS (without the scale) into their tiles; p = 0 throughout a row whose lse is -inf (it sees
// no key).
template <typename T>
__device__ __forceinline__ void score_tile(const Attn& p, const BwdSmem& s, int a, int sub, int i, int j0, float lse_i,
                                           float delta_i, float norm_i) {
  float dot[4], dp[4];
  dot4(dot, s.qs, s.ks, p.d, a, sub);
  dot4(dp, s.dos, s.vs, p.dv, a, sub);
  const float lse_log2 = lse_i * kLog2e;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float dcap;
    const float sc = final_score<T>(p, dot[k], i, j0 + sub + 8 * k, dcap);
    const float pk = lse_i == -INFINITY ? 0.f : norm_i * exp2f(fmaf(sc, kLog2e, -lse_log2));
    s.ps[a * kScoreLd + sub + 8 * k] = pk;
    s.ds[a * kScoreLd + sub + 8 * k] = pk * (dp[k] - delta_i) * dcap;
  }
}

template <typename T, int C>
__global__ void __launch_bounds__(kF32Threads) sdpa_bwd_dq_kernel(const Attn p, int m_blocks) {
  extern __shared__ float smem_f32[];
  const BwdSmem s(smem_f32, p.d, p.dv);
  const int a = threadIdx.x >> 3, sub = threadIdx.x & 7;
  int mb, bh;
  block_of(m_blocks, p.batch * p.heads, mb, bh);
  const int b = bh / p.heads, h = bh % p.heads, kvh = h / p.group;
  const int m0 = mb * kTile, i = m0 + a;
  load_rows_f32(s.qs, p.q.head<const T>(b, h), p.q.ss, p.q.se, m0, p.sq, p.d);
  load_rows_f32(s.dos, p.dout.head<const T>(b, h), p.dout.ss, p.dout.se, m0, p.sq, p.dv);
  __syncthreads();
  // D_i = do_i . o_i over the 8 threads of the row, o read once from global memory.
  float delta_i = 0.f, lse_i = -INFINITY;
  if (i < p.sq) {
    const T* orow = p.o.head<const T>(b, h) + static_cast<int64_t>(i) * p.o.ss;
    for (int e = sub; e < p.dv; e += 8)
      delta_i = fmaf(s.dos[a * (p.dv + 1) + e], to_float(orow[static_cast<int64_t>(e) * p.o.se]), delta_i);
    lse_i = p.lse.head<const float>(b, h)[static_cast<int64_t>(i) * p.lse.ss];
  }
  delta_i = row8_sum(delta_i);

  const T* kg = p.k.head<const T>(b, kvh);
  const T* vg = p.v.head<const T>(b, kvh);
  int lo, hi;
  key_range(p, m0, min(m0 + kTile, p.sq) - 1, lo, hi);
  // n_i: the first pass over the key tiles sums the row's p as the second pass computes it.
  float row_sum = 0.f;
  const float lse_log2 = lse_i * kLog2e;
  for (int j0 = lo / kTile * kTile; j0 < hi; j0 += kTile) {
    __syncthreads();  // every thread is done with the previous k
    load_rows_f32(s.ks, kg, p.k.ss, p.k.se, j0, p.sk, p.d);
    __syncthreads();
    float dot[4];
    dot4(dot, s.qs, s.ks, p.d, a, sub);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float dcap;
      const float sc = final_score<T>(p, dot[k], i, j0 + sub + 8 * k, dcap);
      if (lse_i != -INFINITY) row_sum += exp2f(fmaf(sc, kLog2e, -lse_log2));
    }
  }
  row_sum = row8_sum(row_sum);
  const float norm_i = row_sum > 0.f ? 1.f / row_sum : 0.f;
  if (i < p.sq && sub == 0) {
    const int64_t r = (static_cast<int64_t>(b) * p.heads + h) * p.sq + i;
    p.delta[r] = delta_i;
    p.delta[static_cast<int64_t>(p.batch) * p.heads * p.sq + r] = norm_i;
  }
  float dq[C / 8];
#pragma unroll
  for (int c = 0; c < C / 8; ++c) dq[c] = 0.f;
  for (int j0 = lo / kTile * kTile; j0 < hi; j0 += kTile) {
    __syncthreads();  // every thread is done with the previous k, v and dS
    load_rows_f32(s.ks, kg, p.k.ss, p.k.se, j0, p.sk, p.d);
    load_rows_f32(s.vs, vg, p.v.ss, p.v.se, j0, p.sk, p.dv);
    __syncthreads();
    score_tile<T>(p, s, a, sub, i, j0, lse_i, delta_i, norm_i);
    __syncwarp();  // row a's dS, written by its 8 threads of this warp
    for (int jj = 0; jj < kTile; ++jj) {
      const float dsj = s.ds[a * kScoreLd + jj];
      const float* kr = s.ks + jj * (p.d + 1);
#pragma unroll
      for (int c = 0; c < C / 8; ++c)
        if (sub + 8 * c < p.d) dq[c] = fmaf(dsj, kr[sub + 8 * c], dq[c]);
    }
  }
  if (i >= p.sq) return;
  T* out = p.dq.head<T>(b, h) + static_cast<int64_t>(i) * p.dq.ss;
#pragma unroll
  for (int c = 0; c < C / 8; ++c)
    if (sub + 8 * c < p.d) out[static_cast<int64_t>(sub + 8 * c) * p.dq.se] = from_float<T>(dq[c] * p.scale);
}

template <typename T, int C>
__global__ void __launch_bounds__(kF32Threads) sdpa_bwd_dkv_kernel(const Attn p, int n_blocks) {
  extern __shared__ float smem_f32[];
  const BwdSmem s(smem_f32, p.d, p.dv);
  const int a = threadIdx.x >> 3, sub = threadIdx.x & 7;
  int nb, bkv;
  block_of(n_blocks, p.batch * p.kv_heads, nb, bkv);
  const int b = bkv / p.kv_heads, kvh = bkv % p.kv_heads;
  const int j0 = nb * kTile;
  load_rows_f32(s.ks, p.k.head<const T>(b, kvh), p.k.ss, p.k.se, j0, p.sk, p.d);
  load_rows_f32(s.vs, p.v.head<const T>(b, kvh), p.v.ss, p.v.se, j0, p.sk, p.dv);
  int lo, hi;
  query_range(p, j0, min(j0 + kTile, p.sk) - 1, lo, hi);

  // Thread (a, sub) accumulates key j0 + a: dk and dv elements sub + 8 c.
  float dk[C / 8], dv[C / 8];
#pragma unroll
  for (int c = 0; c < C / 8; ++c) dk[c] = dv[c] = 0.f;
  for (int h = kvh * p.group; h < (kvh + 1) * p.group; ++h) {
    const T* qg = p.q.head<const T>(b, h);
    const T* dog = p.dout.head<const T>(b, h);
    const float* lg = p.lse.head<const float>(b, h);
    const float* dg = p.delta + (static_cast<int64_t>(b) * p.heads + h) * p.sq;
    const float* ng = dg + static_cast<int64_t>(p.batch) * p.heads * p.sq;
    for (int m0 = lo / kTile * kTile; m0 < hi; m0 += kTile) {
      __syncthreads();  // every thread is done with the previous q, do, P and dS (and k, v are loaded)
      load_rows_f32(s.qs, qg, p.q.ss, p.q.se, m0, p.sq, p.d);
      load_rows_f32(s.dos, dog, p.dout.ss, p.dout.se, m0, p.sq, p.dv);
      if (threadIdx.x < kTile) {
        const int i = m0 + threadIdx.x;
        s.lse[threadIdx.x] = i < p.sq ? lg[static_cast<int64_t>(i) * p.lse.ss] : -INFINITY;
        s.delta[threadIdx.x] = i < p.sq ? dg[i] : 0.f;
        s.norm[threadIdx.x] = i < p.sq ? ng[i] : 0.f;
      }
      __syncthreads();
      score_tile<T>(p, s, a, sub, m0 + a, j0, s.lse[a], s.delta[a], s.norm[a]);
      __syncthreads();  // key a reads column a of P and dS, written by every warp
      for (int r = 0; r < kTile; ++r) {
        const float pr = s.ps[r * kScoreLd + a], dsr = s.ds[r * kScoreLd + a];
        const float* qr = s.qs + r * (p.d + 1);
        const float* dor = s.dos + r * (p.dv + 1);
#pragma unroll
        for (int c = 0; c < C / 8; ++c) {
          const int e = sub + 8 * c;
          if (e < p.dv) dv[c] = fmaf(pr, dor[e], dv[c]);
          if (e < p.d) dk[c] = fmaf(dsr, qr[e], dk[c]);
        }
      }
    }
  }
  const int j = j0 + a;
  if (j >= p.sk) return;
  T* dk_row = p.dk.head<T>(b, kvh) + static_cast<int64_t>(j) * p.dk.ss;
  T* dv_row = p.dv_out.head<T>(b, kvh) + static_cast<int64_t>(j) * p.dv_out.ss;
#pragma unroll
  for (int c = 0; c < C / 8; ++c) {
    const int e = sub + 8 * c;
    if (e < p.d) dk_row[static_cast<int64_t>(e) * p.dk.se] = from_float<T>(dk[c] * p.scale);
    if (e < p.dv) dv_row[static_cast<int64_t>(e) * p.dv_out.se] = from_float<T>(dv[c]);
  }
}

}  // namespace dnnb::cuda_kernels::sdpa
