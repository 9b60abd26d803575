// The mLSTM backward on the FMA units (mlstm_bwd.cu), every dtype, as three sweeps over the
// sequence in tiles of 32 positions that carry a state instead of forming the S x S matrices.
//
// With Nn[t] = n[t] + eps, the forward's m[t], D[t,s] = exp(c[t] - c[s] + i[s] - m[t]) (s <= t),
// S[t,s] = scale q_t . k_s and the row term del[t] (0, or the gradient through n):
//   P[t,s] = (dh_t . v_s / Nn[t] + del[t]) D[t,s]
//   dq_t = scale sum_{s<=t} P[t,s] k_s,   dk_s = scale sum_{t>=s} P[t,s] q_t,
//   dv_s = sum_{t>=s} S[t,s] D[t,s] dh_t / Nn[t].
// D factors as exp(c[t] - m[t]) exp(i[s] - c[s]), so the pairs of earlier (later) tiles come
// through a state: for dq the forward's C = sum_s exp(...) k_s v_s^T and n = sum_s exp(...) k_s
// (dq_t's share exp(b[t] + r - m[t]) (C dh_t / Nn[t] + del[t] n)); for dk and dv the reverse
// state Q = sum_t exp(...) q_t (dh_t / Nn[t])^T and qbar = sum_t exp(...) del[t] q_t (dk_s's share
// exp(g + a[s] + rho) (Q v_s + qbar), dv_s's exp(g + a[s] + rho) scale Q^T k_s). In tile-local
// terms (mlstm_common.cuh: b the tile's cumulative log forget gate, a = i - b, g = b[L-1]),
// mu[t] = b[t] - m[t] and D[t,s] = exp(mu[t] + a[s]); the states carry their own stabilisers r
// (forward: r = max(r + g..., max a)) and rho (reverse: rho = max(g + rho, max mu)), -inf before
// the first tile they see, so every weight is exp of a difference of tile-local values <= 0.
//
// Three kernels, a block of 4 warps each:
//   mlstm_bwd_dq_kernel  per (b, h, 32 of DQK): forward sweep, C [32][DV] and n [32] in shared
//                        memory; writes dq and, per row, its share of q . dq.
//   mlstm_bwd_dk_kernel  per (b, h, 32 of DQK): reverse sweep, Q [32][DV] and qbar [32]; writes
//                        dk and its share of k . dk.
//   mlstm_bwd_dv_kernel  per (b, h, 32 of DV): reverse sweep, Q [DQK][32]; writes dv.
// Rows in shared memory are padded by one float, so that a warp reading one column across 32
// rows hits 32 banks. All arithmetic in f32.
#pragma once
#include "kernels/cuda/mlstm_common.cuh"

namespace dnnb::cuda_kernels::mlstm {

inline constexpr int kBwdL = 32, kBwdThreads = 128, kBwdTile = 32, kBwdMaxDim = 256;

struct BwdArgs {
  int batch = 1, heads = 1, s = 1, dqk = 1, dv = 1;
  float scale = 1.f, eps = 1e-6f;
  Operand q, k, v, i, f, dh, n, m;  // inputs
  Operand dq, dk, dvo, di, df;      // outputs (dvo: dv)
  const float* del = nullptr;       // [B, NH, S] contiguous, or null (0)
  float* qdq = nullptr;             // [B, NH, S, DQK tiles]: shares of q . dq
  float* kdk = nullptr;             // [B, NH, S, DQK tiles]: shares of k . dk
};

// The gates of one tile of L positions for the backward, written by warp 0 (positions lane,
// lane + 32, ...).
template <int L>
struct BwdGatesT {
  float a[L];    // i - b; -inf past the sequence
  float mu[L];   // b - m; -inf past the sequence
  float rn[L];   // 1 / (n + eps)
  float del[L];
  float w[L];    // the state's weight on the row or key (per kernel)
  float e[L];    // the state's update weight: forward exp(a - r'), reverse exp(mu - rho')
  float gs;      // the state's decay over the tile
  float stab;    // the state's stabiliser after this tile (r or rho)
};
using BwdGates = BwdGatesT<kBwdL>;

// Warp 0: the tile's gates. kForward: the dq sweep (state r, weights on rows w = exp(mu + r),
// update abar in e); else a reverse sweep (state rho: weights on keys w = exp(g + a + rho),
// update e = exp(mu - rho')). `stab` holds the state's stabiliser before the tile.
template <bool kForward, int L = kBwdL>
__device__ __forceinline__ void bwd_prep(BwdGatesT<L>& gt, const BwdArgs& p, int b, int h, int t0, int lane,
                                         float stab) {
  float carry = 0.f, amax = kNegInf, mumax = kNegInf;
#pragma unroll
  for (int j = 0; j < L / 32; ++j) {
    const int pos = lane + 32 * j;
    const int t = t0 + pos;
    const bool valid = t < p.s;
    const int64_t ti = valid ? t : 0;
    const float fv = p.f.head<const float>(b, h)[ti * p.f.ss];
    const float iv = p.i.head<const float>(b, h)[ti * p.i.ss];
    const float mv = p.m.head<const float>(b, h)[ti * p.m.ss];
    const float nv = p.n.head<const float>(b, h)[ti * p.n.ss];
    const float ls = valid ? log_sigmoid(fv) : 0.f;
    const float bb = warp_scan_sum(ls, lane) + carry;
    carry = __shfl_sync(0xffffffffu, bb, 31);
    const float a = valid ? iv - bb : kNegInf;
    const float mu = valid ? bb - mv : kNegInf;
    gt.a[pos] = a;
    gt.mu[pos] = mu;
    gt.rn[pos] = valid ? 1.f / (nv + p.eps) : 0.f;
    gt.del[pos] = valid && p.del != nullptr ? p.del[(static_cast<int64_t>(b) * p.heads + h) * p.s + t] : 0.f;
    amax = fmaxf(amax, a);
    mumax = fmaxf(mumax, mu);
  }
  const float g = carry;
  for (int o = 16; o > 0; o /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    mumax = fmaxf(mumax, __shfl_xor_sync(0xffffffffu, mumax, o));
  }
  if constexpr (kForward) {
    // State after the tile: stabiliser rr = max(r, max a), C' = exp(r - rr) C + sum exp(a - rr) k v^T.
    const float rr = fmaxf(stab, amax);
#pragma unroll
    for (int j = 0; j < L / 32; ++j) {
      const int pos = lane + 32 * j;  // own lane's writes above: no barrier needed
      gt.w[pos] = stab == kNegInf ? 0.f : expf(gt.mu[pos] + stab);
      gt.e[pos] = rr == kNegInf ? 0.f : expf(gt.a[pos] - rr);
    }
    if (lane == 0) {
      gt.gs = stab == kNegInf ? 0.f : expf(stab - rr);
      gt.stab = rr == kNegInf ? kNegInf : g + rr;
    }
  } else {
    // Keys see the later tiles' state with weight exp(g + a + rho); then rho' = max(g + rho, max mu).
    const float rho = fmaxf(stab + g, mumax);
#pragma unroll
    for (int j = 0; j < L / 32; ++j) {
      const int pos = lane + 32 * j;
      gt.w[pos] = stab == kNegInf ? 0.f : expf(g + gt.a[pos] + stab);
      gt.e[pos] = rho == kNegInf ? 0.f : expf(gt.mu[pos] - rho);
    }
    if (lane == 0) {
      gt.gs = stab == kNegInf ? 0.f : expf(stab + g - rho);
      gt.stab = rho;
    }
  }
}

// The shared-memory layout of the dq and dk kernels (D = DV) and of the dv kernel (D = DQK).
struct BwdLayout {
  int ld;  // padded row of the long operands (D + 1 floats)
  size_t state, vec, x, y, c1, c2, pm, gates, bytes;
};

// dq/dk: state [32][ld], vec [32], x = dh [L][ld], y = v [L][ld], c1 = k or q columns [L][33],
// c2 = q or k columns [L][33]. dv: state [DQK][33], x = q [L][ld], y = k [L][ld], c1 = dh
// columns [L][33].
inline BwdLayout bwd_layout(int d, bool dv_kernel) {
  BwdLayout l;
  l.ld = d + 1;
  const size_t f = sizeof(float);
  l.state = 0;
  l.vec = l.state + f * (dv_kernel ? static_cast<size_t>(d) * 33 : static_cast<size_t>(32) * l.ld);
  l.x = l.vec + f * 32;
  l.y = l.x + f * kBwdL * l.ld;
  l.c1 = l.y + f * kBwdL * l.ld;
  l.c2 = l.c1 + f * kBwdL * 33;
  l.pm = l.c2 + f * kBwdL * 33;
  l.gates = l.pm + f * kBwdL * 33;
  l.bytes = l.gates + (sizeof(BwdGates) + 15) / 16 * 16;
  return l;
}

// Rows [t0, t0 + L) of a [S, cols] operand (columns c0 .. c0 + n - 1) into dst [L][ld] as f32;
// zero past the sequence and past n.
template <typename T>
__device__ __forceinline__ void bwd_load(float* dst, int ld, const T* base, int64_t ss, int64_t se, int t0, int s,
                                         int c0, int n, int width) {
  for (int idx = threadIdx.x; idx < kBwdL * width; idx += kBwdThreads) {
    const int r = idx / width, c = idx % width;
    const int64_t row = t0 + r;
    dst[r * ld + c] = row < s && c < n ? to_float(base[row * ss + static_cast<int64_t>(c0 + c) * se]) : 0.f;
  }
}

// P[t][s] = (dh_t . v_s / Nn[t] + del[t]) exp(mu[t] + a[s]) for s <= t, else 0 (warp w: rows
// w + 4 j, lane s). x = dh, y = v, rows of `len` floats.
__device__ __forceinline__ void bwd_p(float* pm, const float* x, const float* y, int ld, int len, const BwdGates& gt,
                                      int warp, int lane) {
  for (int j = 0; j < kBwdL / 4; ++j) {
    const int t = warp + 4 * j;
    float v = 0.f;
    if (lane <= t) {
      float dot = 0.f;
      for (int e = 0; e < len; ++e) dot = fmaf(x[t * ld + e], y[lane * ld + e], dot);
      v = fmaf(dot, gt.rn[t], gt.del[t]) * expf(gt.mu[t] + gt.a[lane]);
    }
    pm[t * 33 + lane] = v;
  }
}

// kDk = false: the dq sweep (forward); true: the dk sweep (reverse). Block per (b, h, 32 of DQK).
template <typename T, bool kDk>
__global__ void __launch_bounds__(kBwdThreads) mlstm_bwd_qk_kernel(const BwdArgs p, const BwdLayout lay) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int dtiles = (p.dqk + kBwdTile - 1) / kBwdTile;
  const int dt = static_cast<int>(blockIdx.x) % dtiles;
  const int bh = static_cast<int>(blockIdx.x) / dtiles;
  const int b = bh / p.heads, h = bh % p.heads;
  const int d0 = dt * kBwdTile, dn = min(kBwdTile, p.dqk - d0);
  const int ld = lay.ld, dv = p.dv;
  float* st = reinterpret_cast<float*>(smem + lay.state);  // [32][ld]
  float* vec = reinterpret_cast<float*>(smem + lay.vec);   // n (dq) or qbar (dk), [32]
  float* dh_s = reinterpret_cast<float*>(smem + lay.x);
  float* v_s = reinterpret_cast<float*>(smem + lay.y);
  float* own = reinterpret_cast<float*>(smem + lay.c1);    // dq: k columns; dk: q columns (the product)
  float* other = reinterpret_cast<float*>(smem + lay.c2);  // dq: q columns; dk: k columns (the dot)
  float* pm = reinterpret_cast<float*>(smem + lay.pm);
  BwdGates& gt = *reinterpret_cast<BwdGates*>(smem + lay.gates);

  for (int idx = threadIdx.x; idx < 32 * ld; idx += kBwdThreads) st[idx] = 0.f;
  if (threadIdx.x < 32) vec[threadIdx.x] = 0.f;
  const T* qg = p.q.head<const T>(b, h);
  const T* kg = p.k.head<const T>(b, h);
  float stab = kNegInf;  // warp 0's
  const int n_tiles = (p.s + kBwdL - 1) / kBwdL;
  for (int it = 0; it < n_tiles; ++it) {
    const int tile = kDk ? n_tiles - 1 - it : it;
    const int t0 = tile * kBwdL;
    bwd_load(dh_s, ld, p.dh.head<const T>(b, h), p.dh.ss, p.dh.se, t0, p.s, 0, dv, dv);
    bwd_load(v_s, ld, p.v.head<const T>(b, h), p.v.ss, p.v.se, t0, p.s, 0, dv, dv);
    bwd_load(own, 33, kDk ? qg : kg, kDk ? p.q.ss : p.k.ss, kDk ? p.q.se : p.k.se, t0, p.s, d0, dn, 32);
    bwd_load(other, 33, kDk ? kg : qg, kDk ? p.k.ss : p.q.ss, kDk ? p.k.se : p.q.se, t0, p.s, d0, dn, 32);
    if (warp == 0) {
      bwd_prep<!kDk>(gt, p, b, h, t0, lane, stab);
      stab = __shfl_sync(0xffffffffu, gt.stab, 0);
    }
    __syncthreads();
    bwd_p(pm, dh_s, v_s, ld, dv, gt, warp, lane);
    __syncthreads();  // P's columns are read across warps by the dk sweep
    // Rows r = warp + 4 j (dq: query rows; dk: key rows), lane: column d0 + lane.
    for (int j = 0; j < kBwdL / 4; ++j) {
      const int r = warp + 4 * j;
      const int row = t0 + r;
      float inter = 0.f;
      const float wr = gt.w[r];
      if (wr != 0.f) {
        const float* xr = kDk ? v_s + r * ld : dh_s + r * ld;
        for (int e = 0; e < dv; ++e) inter = fmaf(st[lane * ld + e], xr[e], inter);
        inter = kDk ? inter + vec[lane] : fmaf(inter, gt.rn[r], gt.del[r] * vec[lane]);
        inter *= wr;
      }
      float intra = 0.f;
      if constexpr (kDk) {
        for (int t = r; t < kBwdL; ++t) intra = fmaf(pm[t * 33 + r], own[t * 33 + lane], intra);
      } else {
        for (int s = 0; s <= r; ++s) intra = fmaf(pm[r * 33 + s], own[s * 33 + lane], intra);
      }
      const float g = p.scale * (inter + intra);
      float dot = other[r * 33 + lane] * g;
      for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (row < p.s) {
        const Operand& out = kDk ? p.dk : p.dq;
        if (lane < dn)
          out.head<T>(b, h)[static_cast<int64_t>(row) * out.ss + static_cast<int64_t>(d0 + lane) * out.se] =
              from_float<T>(g);
        if (lane == 0) (kDk ? p.kdk : p.qdq)[((static_cast<int64_t>(bh) * p.s) + row) * dtiles + dt] = dot;
      }
    }
    __syncthreads();  // the state is read
    // State update: dq: C = gs C + sum_s e[s] k_s v_s^T, n = gs n + sum_s e[s] k_s; dk:
    // Q = gs Q + sum_t e[t] q_t (dh_t / Nn[t])^T, qbar = gs qbar + sum_t e[t] del[t] q_t.
    // Thread: rows d = warp + 4 i, columns lane + 32 c.
    const float gs = gt.gs;
    const float* xs = kDk ? dh_s : v_s;
    for (int d = warp; d < 32; d += 4) {
      for (int e = lane; e < dv; e += 32) {
        float acc = 0.f;
        for (int u = 0; u < kBwdL; ++u) {
          const float wgt = kDk ? gt.e[u] * gt.rn[u] : gt.e[u];
          acc = fmaf(wgt * own[u * 33 + d], xs[u * ld + e], acc);
        }
        st[d * ld + e] = fmaf(gs, st[d * ld + e], acc);
      }
    }
    if (threadIdx.x < 32) {
      const int d = threadIdx.x;
      float acc = 0.f;
      for (int u = 0; u < kBwdL; ++u) acc = fmaf(kDk ? gt.e[u] * gt.del[u] : gt.e[u], own[u * 33 + d], acc);
      vec[d] = fmaf(gs, vec[d], acc);
    }
    __syncthreads();  // the tile's operands and gates are free
  }
}

// dv: block per (b, h, 32 of DV), reverse sweep with Q [DQK][32].
template <typename T>
__global__ void __launch_bounds__(kBwdThreads) mlstm_bwd_dv_kernel(const BwdArgs p, const BwdLayout lay) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int jtiles = (p.dv + kBwdTile - 1) / kBwdTile;
  const int jt = static_cast<int>(blockIdx.x) % jtiles;
  const int bh = static_cast<int>(blockIdx.x) / jtiles;
  const int b = bh / p.heads, h = bh % p.heads;
  const int j0 = jt * kBwdTile, jn = min(kBwdTile, p.dv - j0);
  const int ld = lay.ld, dqk = p.dqk;
  float* st = reinterpret_cast<float*>(smem + lay.state);  // Q [DQK][33]
  float* q_s = reinterpret_cast<float*>(smem + lay.x);
  float* k_s = reinterpret_cast<float*>(smem + lay.y);
  float* dh_s = reinterpret_cast<float*>(smem + lay.c1);
  float* am = reinterpret_cast<float*>(smem + lay.pm);  // S D / Nn, [t][s]
  BwdGates& gt = *reinterpret_cast<BwdGates*>(smem + lay.gates);

  for (int idx = threadIdx.x; idx < dqk * 33; idx += kBwdThreads) st[idx] = 0.f;
  float stab = kNegInf;
  const int n_tiles = (p.s + kBwdL - 1) / kBwdL;
  for (int it = 0; it < n_tiles; ++it) {
    const int t0 = (n_tiles - 1 - it) * kBwdL;
    bwd_load(q_s, ld, p.q.head<const T>(b, h), p.q.ss, p.q.se, t0, p.s, 0, dqk, dqk);
    bwd_load(k_s, ld, p.k.head<const T>(b, h), p.k.ss, p.k.se, t0, p.s, 0, dqk, dqk);
    bwd_load(dh_s, 33, p.dh.head<const T>(b, h), p.dh.ss, p.dh.se, t0, p.s, j0, jn, 32);
    if (warp == 0) {
      bwd_prep<false>(gt, p, b, h, t0, lane, stab);
      stab = __shfl_sync(0xffffffffu, gt.stab, 0);
    }
    __syncthreads();
    // A[t][s] = scale (q_t . k_s) exp(mu[t] + a[s]) / Nn[t], s <= t (warp: rows t = w + 4 j, lane s).
    for (int j = 0; j < kBwdL / 4; ++j) {
      const int t = warp + 4 * j;
      float v = 0.f;
      if (lane <= t) {
        float dot = 0.f;
        for (int e = 0; e < dqk; ++e) dot = fmaf(q_s[t * ld + e], k_s[lane * ld + e], dot);
        v = dot * p.scale * expf(gt.mu[t] + gt.a[lane]) * gt.rn[t];
      }
      am[t * 33 + lane] = v;
    }
    __syncthreads();
    // dv_s (rows s = warp + 4 j, lane: column j0 + lane) = sum_{t>=s} A[t][s] dh_t + w[s] scale Q^T k_s.
    for (int j = 0; j < kBwdL / 4; ++j) {
      const int s = warp + 4 * j;
      const int row = t0 + s;
      float inter = 0.f;
      if (gt.w[s] != 0.f) {
        for (int d = 0; d < dqk; ++d) inter = fmaf(k_s[s * ld + d], st[d * 33 + lane], inter);
        inter *= gt.w[s] * p.scale;
      }
      float intra = 0.f;
      for (int t = s; t < kBwdL; ++t) intra = fmaf(am[t * 33 + s], dh_s[t * 33 + lane], intra);
      if (row < p.s && lane < jn)
        p.dvo.head<T>(b, h)[static_cast<int64_t>(row) * p.dvo.ss + static_cast<int64_t>(j0 + lane) * p.dvo.se] =
            from_float<T>(inter + intra);
    }
    __syncthreads();
    // Q = gs Q + sum_t e[t] q_t dh_t^T (thread: rows d = warp + 4 i, column lane).
    const float gs = gt.gs;
    for (int d = warp; d < dqk; d += 4) {
      float acc = 0.f;
      for (int u = 0; u < kBwdL; ++u) acc = fmaf(gt.e[u] * gt.rn[u] * q_s[u * ld + d], dh_s[u * 33 + lane], acc);
      st[d * 33 + lane] = fmaf(gs, st[d * 33 + lane], acc);
    }
    __syncthreads();
  }
}

// del[row] = -sigma (sum of the row's shares of dh . h) / (n + eps); rows in [B, NH, S] order.
__global__ void __launch_bounds__(256) mlstm_bwd_del_kernel(const BwdArgs p, const float* dh_dot, const float* sigma,
                                                            int tiles, float* del) {
  const int64_t at = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t rows = static_cast<int64_t>(p.batch) * p.heads * p.s;
  if (at >= rows) return;
  const int t = static_cast<int>(at % p.s);
  const int bh = static_cast<int>(at / p.s);
  float dot = 0.f;
  for (int j = 0; j < tiles; ++j) dot += dh_dot[at * tiles + j];
  const float n = p.n.head<const float>(bh / p.heads, bh % p.heads)[static_cast<int64_t>(t) * p.n.ss];
  del[at] = sigma[at] == 0.f ? 0.f : -sigma[at] * dot / (n + p.eps);
}

// di and df from the shares of q . dq and k . dk: di = k . dk, dfbar = reverse cumsum of
// (q . dq - k . dk), df = dfbar sigmoid(-f). One warp per (b, h), tiles of 32 from the end.
__global__ void __launch_bounds__(32) mlstm_bwd_gates_kernel(const BwdArgs p) {
  const int lane = threadIdx.x;
  const int bh = static_cast<int>(blockIdx.x);
  const int b = bh / p.heads, h = bh % p.heads;
  const int dtiles = (p.dqk + kBwdTile - 1) / kBwdTile;
  float carry = 0.f;
  for (int t0 = (p.s - 1) / 32 * 32; t0 >= 0; t0 -= 32) {
    const int t = t0 + lane;
    const bool valid = t < p.s;
    float qdq = 0.f, kdk = 0.f;
    if (valid) {
      const int64_t base = (static_cast<int64_t>(bh) * p.s + t) * dtiles;
      for (int d = 0; d < dtiles; ++d) {
        qdq += p.qdq[base + d];
        kdk += p.kdk[base + d];
      }
    }
    // Suffix sum over the lanes (lane 31 first), then the later tiles' total.
    float x = valid ? qdq - kdk : 0.f;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const float y = __shfl_down_sync(0xffffffffu, x, off);
      if (lane + off < 32) x += y;
    }
    x += carry;
    carry = __shfl_sync(0xffffffffu, x, 0);
    if (valid) {
      const float fv = p.f.head<const float>(b, h)[static_cast<int64_t>(t) * p.f.ss];
      p.di.head<float>(b, h)[static_cast<int64_t>(t) * p.di.ss] = kdk;
      p.df.head<float>(b, h)[static_cast<int64_t>(t) * p.df.ss] = x * expf(log_sigmoid(-fv));
    }
  }
}

}  // namespace dnnb::cuda_kernels::mlstm
