// The mLSTM backward's three sweeps (mlstm_bwd_fma.cuh has the math) on the tensor cores, for
// f16/bf16 with DQK and DV multiples of 32 up to 256: one kernel, three uses. Each sweep is a
// forward-like pass: output rows r of a tile of 64, 32 output columns a block, scores
// X_r . Y_c over K1 columns, P from the scores and the gates, out = scale (P Z + inter) with
// inter from a state St [32][K1] that carries the earlier (dq) or later (dk, dv) tiles:
//   sweep  dir      X   Y   Z (cols)   K1   P[r, c]                               inter[r, d]
//   dq     forward  dh  v   k (DQK)    DV   (sc rn[r] + del[r]) exp(mu[r] + a[c])  w[r] (rn[r] (X St^T) + del[r] vec)
//   dk     reverse  v   dh  q (DQK)    DV   (sc rn[c] + del[c]) exp(mu[c] + a[r])  w[r] ((X St^T) + vec)
//   dv     reverse  k   q   dh (DV)    DQK  sc rn[c] exp(mu[c] + a[r])             w[r] (X St^T)
// (c <= r forward, c >= r reverse). The state update is St = gs St + sum_u wz[u] Z_u Y_u^T with
// wz = e (dq) or e rn (dk, dv), and vec = gs vec + sum_u wv[u] Z_u with wv = e (dq, the n state) or
// e del (dk, qbar). dq and dk also write their rows' shares of q . dq and k . dk (W = q or k).
//
// Per tile (warp w: output rows 16 w .. 16 w + 15; a single stage of shared memory, two blocks
// an SM at K1 = 256): scores on mma.sync m16n8k16 over the causal key tiles only, o = X St^T
// (St in shared memory as hi + lo in the dtype, the B operand), P as hi + lo A operands of P Z,
// then the state: each warp owns K1 / 4 of St's columns in f32 registers, the A
// operand (wz Z)^T read transposed from Z's tile and split into hi + lo, Y the B operand. Every
// rounding but the outputs' is split (P too, as hi + lo A fragments): di and df come from the
// f32 dot products of the rows with dq and dk, and their tolerance is that of f32 arithmetic.
#pragma once
#include "kernels/cuda/mlstm_bwd_fma.cuh"
#include "kernels/cuda/mlstm_mma.cuh"

namespace dnnb::cuda_kernels::mlstm {

inline constexpr int kBwdMmaL = 64, kBwdMmaCols = 32;

enum BwdSweep : int { kSweepDq = 0, kSweepDk = 1, kSweepDv = 2 };

// Which operands cp.async may copy (attention_operand.cuh's async_rows).
struct BwdMmaPaths {
  bool q = false, k = false, v = false, dh = false;
};

inline BwdMmaPaths bwd_mma_paths(const BwdArgs& a) { return {async_rows(a.q), async_rows(a.k), async_rows(a.v), async_rows(a.dh)}; }

template <int K1>
struct BwdMmaLayout {
  static constexpr int kX = 0;
  static constexpr int kY = kX + kBwdMmaL * K1 * 2;
  static constexpr int kZ = kY + kBwdMmaL * K1 * 2;
  static constexpr int kW = kZ + kBwdMmaL * kBwdMmaCols * 2;
  static constexpr int kSt = kW + kBwdMmaL * kBwdMmaCols * 2;
  static constexpr int kStBytes = kBwdMmaCols * K1 * 2;  // one of hi, lo
  static constexpr int kVec = kSt + 2 * kStBytes;
  static constexpr int kGates = kVec + kBwdMmaCols * 4;
  static constexpr int kSmem = kGates + static_cast<int>(sizeof(BwdGatesT<kBwdMmaL>) + 15) / 16 * 16;
};

template <typename T, int K1, int kSweep>
__global__ void __launch_bounds__(kMmaThreads) mlstm_bwd_mma_kernel(const BwdArgs p, const BwdMmaPaths paths) {
  using Lay = BwdMmaLayout<K1>;
  constexpr int L = kBwdMmaL, ZC = kBwdMmaCols;
  constexpr bool kRev = kSweep != kSweepDq, kDot = kSweep != kSweepDv, kDel = kSweep != kSweepDv;
  constexpr int kWc = K1 / 4;  // St columns a warp owns in the update
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int ztiles = (kSweep == kSweepDv ? p.dv : p.dqk) / ZC;
  const int zt = static_cast<int>(blockIdx.x) % ztiles;
  const int bh = static_cast<int>(blockIdx.x) / ztiles;
  const int b = bh / p.heads, h = bh % p.heads;
  const int z0 = zt * ZC;

  // X, Y, Z, W by sweep.
  const Operand& xo = kSweep == kSweepDq ? p.dh : kSweep == kSweepDk ? p.v : p.k;
  const Operand& yo = kSweep == kSweepDq ? p.v : kSweep == kSweepDk ? p.dh : p.q;
  const Operand& zo = kSweep == kSweepDq ? p.k : kSweep == kSweepDk ? p.q : p.dh;
  const Operand& wo = kSweep == kSweepDq ? p.q : p.k;
  const bool x_async = kSweep == kSweepDq ? paths.dh : kSweep == kSweepDk ? paths.v : paths.k;
  const bool y_async = kSweep == kSweepDq ? paths.v : kSweep == kSweepDk ? paths.dh : paths.q;
  const bool z_async = kSweep == kSweepDq ? paths.k : kSweep == kSweepDk ? paths.q : paths.dh;
  const bool w_async = kSweep == kSweepDq ? paths.q : paths.k;
  const uint16_t* xg = xo.head<const uint16_t>(b, h);
  const uint16_t* yg = yo.head<const uint16_t>(b, h);
  const uint16_t* zg = zo.head<const uint16_t>(b, h) + static_cast<int64_t>(z0) * zo.se;
  const uint16_t* wg = wo.head<const uint16_t>(b, h) + static_cast<int64_t>(z0) * wo.se;

  unsigned char* x_tile = smem + Lay::kX;
  unsigned char* y_tile = smem + Lay::kY;
  unsigned char* z_tile = smem + Lay::kZ;
  unsigned char* w_tile = smem + Lay::kW;
  unsigned char* st_tile = smem + Lay::kSt;
  float* vec = reinterpret_cast<float*>(smem + Lay::kVec);
  BwdGatesT<L>& gt = *reinterpret_cast<BwdGatesT<L>*>(smem + Lay::kGates);
  const uint32_t x_s = smem_addr(x_tile), y_s = smem_addr(y_tile), z_s = smem_addr(z_tile);
  const uint32_t st_s = smem_addr(st_tile), st_lo_s = st_s + Lay::kStBytes;

  for (int idx = threadIdx.x; idx < 2 * Lay::kStBytes / 16; idx += kMmaThreads)
    reinterpret_cast<uint4*>(st_tile)[idx] = make_uint4(0, 0, 0, 0);
  if (threadIdx.x < ZC) vec[threadIdx.x] = 0.f;

  float acc[2][kWc / 8][4];  // St [32][K1]: rows 16 mi + ..., this warp's columns warp kWc + 8 n + ...
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int n = 0; n < kWc / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mi][n][e] = 0.f;

  float stab = kNegInf;  // warp 0's
  const int n_tiles = (p.s + L - 1) / L;
  for (int it = 0; it < n_tiles; ++it) {
    const int tile = kRev ? n_tiles - 1 - it : it;
    const int t0 = tile * L;
    load_tile<L, K1>(x_tile, xg, xo.ss, xo.se, t0, p.s, x_async);
    load_tile<L, K1>(y_tile, yg, yo.ss, yo.se, t0, p.s, y_async);
    load_tile<L, ZC>(z_tile, zg, zo.ss, zo.se, t0, p.s, z_async);
    if constexpr (kDot) load_tile<L, ZC>(w_tile, wg, wo.ss, wo.se, t0, p.s, w_async);
    cp_async_commit();
    if (warp == 0) {
      bwd_prep<!kRev, L>(gt, p, b, h, t0, lane, stab);
      stab = __shfl_sync(0xffffffffu, gt.stab, 0);
    }
    cp_async_wait<0>();
    __syncthreads();  // the tile's operands and gates, St and vec of the other tiles

    // Scores X Y^T (the causal key tiles) and o = X St^T, sharing X's fragments.
    float s[L / 8][4], o[ZC / 8][4];
#pragma unroll
    for (int n = 0; n < L / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
    for (int n = 0; n < ZC / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < K1 / 16; ++kk) {
      uint32_t af[4];
      ldmatrix_x4(af, x_s + swizzled<K1>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
      for (int jj = 0; jj < L / 16; ++jj) {
        if (kRev ? jj < warp : jj > warp) continue;
        uint32_t r[4];
        ldmatrix_x4(r, y_s + swizzled<K1>(jj * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
        mma_16816<T>(s[2 * jj], af, r[0], r[1]);
        mma_16816<T>(s[2 * jj + 1], af, r[2], r[3]);
      }
#pragma unroll
      for (int jj = 0; jj < ZC / 16; ++jj) {
        const uint32_t off = swizzled<K1>(jj * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1));
        uint32_t r[4];
        ldmatrix_x4(r, st_s + off);
        mma_16816<T>(o[2 * jj], af, r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], af, r[2], r[3]);
        ldmatrix_x4(r, st_lo_s + off);
        mma_16816<T>(o[2 * jj], af, r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], af, r[2], r[3]);
      }
    }

    // P (accumulator (n, e): row 16 warp + g + 8 (e / 2), column 8 n + 2 t + e % 2), rounded to
    // the dtype as A fragments; inter's row and column weights on o.
    int rl[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) rl[r] = warp * 16 + g + 8 * r;
    uint32_t pa[L / 16][4], pl[L / 16][4];
#pragma unroll
    for (int n = 0; n < L / 8; ++n) {
      if (kRev ? n / 2 >= warp : n / 2 <= warp) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = rl[e >> 1], c = 8 * n + 2 * t + (e & 1);
          float v = 0.f;
          if (kRev ? c >= r : c <= r) {
            if constexpr (kRev) {
              const float sc = kDel ? fmaf(s[n][e], gt.rn[c], gt.del[c]) : s[n][e] * gt.rn[c];
              v = sc * expf(gt.mu[c] + gt.a[r]);
            } else {
              v = fmaf(s[n][e], gt.rn[r], gt.del[r]) * expf(gt.mu[r] + gt.a[c]);
            }
          }
          s[n][e] = v;
        }
      }
      pa[n / 2][2 * (n & 1)] = pack2<T>(s[n][0], s[n][1]);
      pa[n / 2][2 * (n & 1) + 1] = pack2<T>(s[n][2], s[n][3]);
      const float2 h0 = unpack2<T>(pa[n / 2][2 * (n & 1)]), h1 = unpack2<T>(pa[n / 2][2 * (n & 1) + 1]);
      pl[n / 2][2 * (n & 1)] = pack2<T>(s[n][0] - h0.x, s[n][1] - h0.y);
      pl[n / 2][2 * (n & 1) + 1] = pack2<T>(s[n][2] - h1.x, s[n][3] - h1.y);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float w = gt.w[rl[r]];
      const float ro = kSweep == kSweepDq ? w * gt.rn[rl[r]] : w;        // on X St^T
      const float rv = kSweep == kSweepDq ? w * gt.del[rl[r]] : kSweep == kSweepDk ? w : 0.f;  // on vec
#pragma unroll
      for (int n = 0; n < ZC / 8; ++n) {
        const int c = n * 8 + 2 * t;
        o[n][2 * r] = fmaf(o[n][2 * r], ro, rv * vec[c]);
        o[n][2 * r + 1] = fmaf(o[n][2 * r + 1], ro, rv * vec[c + 1]);
      }
    }
    // o += P Z (Z as key rows, read with ldmatrix.trans).
#pragma unroll
    for (int kk = 0; kk < L / 16; ++kk) {
      if (kRev ? kk < warp : kk > warp) continue;
#pragma unroll
      for (int jj = 0; jj < ZC / 16; ++jj) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, z_s + swizzled<ZC>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), jj * 2 + (lane >> 4)));
        mma_16816<T>(o[2 * jj], pa[kk], r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], pa[kk], r[2], r[3]);
        mma_16816<T>(o[2 * jj], pl[kk], r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], pl[kk], r[2], r[3]);
      }
    }
    // The outputs (scale o, rounded once) and the rows' shares of W . out.
    const Operand& out = kSweep == kSweepDq ? p.dq : kSweep == kSweepDk ? p.dk : p.dvo;
    T* og = out.head<T>(b, h) + static_cast<int64_t>(z0) * out.se;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = t0 + rl[r];
      const bool in = row < p.s;
      float dot = 0.f;
#pragma unroll
      for (int n = 0; n < ZC / 8; ++n) {
        const int c = n * 8 + 2 * t;
        const float v0 = p.scale * o[n][2 * r], v1 = p.scale * o[n][2 * r + 1];
        if (in) {
          T* orow = og + static_cast<int64_t>(row) * out.ss;
          orow[static_cast<int64_t>(c) * out.se] = from_float<T>(v0);
          orow[static_cast<int64_t>(c + 1) * out.se] = from_float<T>(v1);
        }
        if constexpr (kDot) {
          dot = fmaf(tile_elem<T, ZC>(w_tile, rl[r], c), v0, dot);
          dot = fmaf(tile_elem<T, ZC>(w_tile, rl[r], c + 1), v1, dot);
        }
      }
      if constexpr (kDot) {
        dot += __shfl_xor_sync(0xffffffffu, dot, 1);
        dot += __shfl_xor_sync(0xffffffffu, dot, 2);
        if (in && t == 0) (kSweep == kSweepDq ? p.qdq : p.kdk)[(static_cast<int64_t>(bh) * p.s + row) * ztiles + zt] = dot;
      }
    }
    __syncthreads();  // St and vec are read

    // St = gs St + sum_u wz[u] Z_u Y_u^T: A = (wz Z)^T (Z's tile read transposed, hi + lo), B = Y.
    const float gs = gt.gs;
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int n = 0; n < kWc / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][n][e] *= gs;
#pragma unroll
    for (int kk = 0; kk < L / 16; ++kk) {
      if (t0 + kk * 16 >= p.s) break;  // keys past the sequence weigh 0
      float wz[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int u = kk * 16 + 2 * t + (q & 1) + 8 * (q >> 1);
        wz[q] = kSweep == kSweepDq ? gt.e[u] : gt.e[u] * gt.rn[u];
      }
      uint32_t af[2][4], al[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        const int krow = kk * 16 + (lane & 7) + ((lane >> 4) << 3);
        const int col = mi * 16 + (((lane >> 3) & 1) << 3);
        ldmatrix_x4_trans(af[mi], z_s + swizzled<ZC>(krow, col >> 3));
        scale_pair<T, true>(af[mi][0], wz[0], wz[1], af[mi][0], al[mi][0]);
        scale_pair<T, true>(af[mi][1], wz[0], wz[1], af[mi][1], al[mi][1]);
        scale_pair<T, true>(af[mi][2], wz[2], wz[3], af[mi][2], al[mi][2]);
        scale_pair<T, true>(af[mi][3], wz[2], wz[3], af[mi][3], al[mi][3]);
      }
#pragma unroll
      for (int jj = 0; jj < kWc / 16; ++jj) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, y_s + swizzled<K1>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3),
                                                 (warp * kWc) / 8 + jj * 2 + (lane >> 4)));
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          mma_16816<T>(acc[mi][2 * jj], af[mi], r[0], r[1]);
          mma_16816<T>(acc[mi][2 * jj + 1], af[mi], r[2], r[3]);
          mma_16816<T>(acc[mi][2 * jj], al[mi], r[0], r[1]);
          mma_16816<T>(acc[mi][2 * jj + 1], al[mi], r[2], r[3]);
        }
      }
    }
    // vec = gs vec + sum_u wv[u] Z_u (dq: n; dk: qbar; dv: unused).
    if (kSweep != kSweepDv && threadIdx.x < ZC) {
      const int d = threadIdx.x;
      float a = 0.f;
      const int valid = min(L, p.s - t0);
      for (int u = 0; u < valid; ++u) {
        const float wv = kSweep == kSweepDq ? gt.e[u] : gt.e[u] * gt.del[u];
        a = fmaf(wv, tile_elem<T, ZC>(z_tile, u, d), a);
      }
      vec[d] = fmaf(gs, vec[d], a);
    }
    // St to shared memory as hi + lo. Accumulator (mi, n, e): row 16 mi + g + 8 (e / 2), column
    // warp kWc + 8 n + 2 t + e % 2.
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int n = 0; n < kWc / 8; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = mi * 16 + g + 8 * r;
          const uint32_t off = swizzled<K1>(row, (warp * kWc) / 8 + n) + 4 * t;
          const float c0 = acc[mi][n][2 * r], c1 = acc[mi][n][2 * r + 1];
          const uint32_t hi = pack2<T>(c0, c1);
          const float2 hf = unpack2<T>(hi);
          *reinterpret_cast<uint32_t*>(st_tile + off) = hi;
          *reinterpret_cast<uint32_t*>(st_tile + Lay::kStBytes + off) = pack2<T>(c0 - hf.x, c1 - hf.y);
        }
    __syncthreads();  // the tile's operands are free, St and vec written
  }
}

}  // namespace dnnb::cuda_kernels::mlstm
