// The f16/bf16 mLSTM forward on the tensor cores (mma.sync m16n8k16, f32 accumulation, the
// wrappers of gemm_mma.cuh and the swizzled tiles of attention_mma.cuh), for mlstm_chunkwise and,
// for mlstm (kModeParallel) and for mlstm_bwd's dh . h (kModeDel); the recurrence is in
// mlstm_common.cuh.
//
// One block of 4 warps per (batch, head, DVT columns of v): it walks the sequence in tiles of
// 64 positions, holding the state C (DQK x DVT, f32) in registers and n (DQK, f32) in shared
// memory. Per tile:
//   1. S = q k^T (64 x 64; warp w takes rows 16 w .. 16 w + 15, keys up to its last row only),
//      P = S scale D with D[p, u] = exp(a[u] - mm[p]) (0 above the diagonal), the row sums;
//   2. o = q C_prev (C_prev rounded to the dtype in shared memory, the B operand), scaled by
//      scale inter[p]; den = scale inter[p] (q . n_prev) + rowsum;
//   3. o += P v (P rounded to the dtype as the A operand straight from S's accumulators, as
//      FlashAttention does), h = o / (max(|den|, exp(-m_comb)) + eps);
//   4. C = gl C + (abar k)^T v: k^T read transposed from k's tile, each element weighted by its
//      key's abar and rounded to the dtype (the A operand), v the B operand; n likewise, on the
//      FMA units; C rounded to the dtype into shared memory for the next tile's step 2.
// The next tile's q, k, v are in flight (cp.async) during a tile; warp 0 prepares the next
// tile's gates (a warp scan) during a tile, so their sequential chain stays off the barriers.
// The last tile's state is c_last, n_last, m_last (chunkwise), or the rows' n and m are written
// (parallel form). Tiles past the sequence are zero-filled (q, k, v) with a = -inf.
//
// Rounding. P is rounded to the dtype for P v (as FlashAttention rounds p). The state's two
// roundings (abar k for the update, C for q C_prev) are what mlstm_chunkwise's tolerance allows
// for tokens of earlier chunks (docs/numerics.md, "mLSTM"); so they are taken as they are only
// when every earlier tile's token is in an earlier chunk, i.e. the chunk divides 64. Otherwise,
// and for mlstm (whose tolerance has no state term), kSplit carries each of the two as a hi and
// a lo part in the dtype (hi + lo is the f32 value to about 2^-16): twice the mma work for q C
// and the update, which a block of 32 v columns keeps within two blocks an SM.
#pragma once
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_operand.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/mlstm_common.cuh"

namespace dnnb::cuda_kernels::mlstm {

using attention::async_rows;
using attention::kMmaThreads;
using attention::load_tile;
using attention::MmaPaths;
using attention::mma_paths;
using attention::pack2;
using attention::swizzled;
using attention::tile_elem;
using attention::unpack2;
using gemm::cp_async_commit;
using gemm::cp_async_wait;
using gemm::ldmatrix_x4;
using gemm::ldmatrix_x4_trans;
using gemm::mma_16816;
using gemm::smem_addr;

inline constexpr int kMmaL = 64;

// v columns a block takes: C's DQK x DVT f32 share of a warp stays at 64 registers, and with
// kSplit (two C tiles in shared memory) two blocks still fit an SM at DQK 128.
template <int DQK, bool kSplit>
inline constexpr int kMmaDvt = DQK >= 256 || kSplit ? 32 : 64;

template <int DQK, int DVT, bool kSplit>
struct MmaLayout {
  static constexpr int kQBytes = kMmaL * DQK * 2;
  static constexpr int kKBytes = kMmaL * DQK * 2;
  static constexpr int kVBytes = kMmaL * DVT * 2;
  static constexpr int kStageBytes = kQBytes + kKBytes + kVBytes;
  static constexpr int kCBytes = DQK * DVT * 2;  // one C tile; kSplit: hi, then lo
  static constexpr int kGateBytes = static_cast<int>(sizeof(TileGates<kMmaL>) + 15) / 16 * 16;
  static constexpr int kC = 2 * kStageBytes;
  static constexpr int kN = kC + (kSplit ? 2 : 1) * kCBytes;
  static constexpr int kGates = kN + DQK * 4;
  static constexpr int kSmem = kGates + 2 * kGateBytes;
};

// The two 16-bit elements of x times w0 (low) and w1 (high), each rounded once to hi; lo (with
// kSplit) the rounded remainders, so that hi + lo is the f32 product to about 2^-16 relative.
template <typename T, bool kSplit>
__device__ __forceinline__ void scale_pair(uint32_t x, float w0, float w1, uint32_t& hi, uint32_t& lo) {
  const float2 f = unpack2<T>(x);
  const float p0 = f.x * w0, p1 = f.y * w1;
  hi = pack2<T>(p0, p1);
  if constexpr (kSplit) {
    const float2 h = unpack2<T>(hi);
    lo = pack2<T>(p0 - h.x, p1 - h.y);
  }
}

template <typename T, int DQK, int DVT, int kMode, bool kSplit>
__global__ void __launch_bounds__(kMmaThreads) mlstm_fwd_mma_kernel(const MlstmArgs p, const MmaPaths paths) {
  constexpr bool kParallel = kMode != kModeChunk;
  using Lay = MmaLayout<DQK, DVT, kSplit>;
  constexpr int L = kMmaL;
  constexpr int kMt = DQK / 64;  // 16-row tiles of C per warp
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int dv_tiles = p.dv / DVT;
  const int dvt = static_cast<int>(blockIdx.x) % dv_tiles;
  const int bh = static_cast<int>(blockIdx.x) / dv_tiles;
  const int b = bh / p.heads, h = bh % p.heads;
  const int dv0 = dvt * DVT;

  const uint16_t* qg = p.q.head<const uint16_t>(b, h);
  const uint16_t* kg = p.k.head<const uint16_t>(b, h);
  const uint16_t* vg = p.v.head<const uint16_t>(b, h) + static_cast<int64_t>(dv0) * p.v.se;
  const float* ig = p.i.head<const float>(b, h);
  const float* fg = p.f.head<const float>(b, h);

  auto q_tile = [&](int st) { return smem + st * Lay::kStageBytes; };
  auto k_tile = [&](int st) { return q_tile(st) + Lay::kQBytes; };
  auto v_tile = [&](int st) { return k_tile(st) + Lay::kKBytes; };
  unsigned char* c_tile = smem + Lay::kC;
  float* n_s = reinterpret_cast<float*>(smem + Lay::kN);
  auto gates = [&](int buf) { return reinterpret_cast<TileGates<L>*>(smem + Lay::kGates + buf * Lay::kGateBytes); };
  auto load_qkv = [&](int st, int t0) {
    load_tile<L, DQK>(q_tile(st), qg, p.q.ss, p.q.se, t0, p.s, paths.q_async);
    load_tile<L, DQK>(k_tile(st), kg, p.k.ss, p.k.se, t0, p.s, paths.k_async);
    load_tile<L, DVT>(v_tile(st), vg, p.v.ss, p.v.se, t0, p.s, paths.v_async);
  };

  const int n_tiles = (p.s + L - 1) / L;
  load_qkv(0, 0);
  cp_async_commit();
  for (int idx = threadIdx.x; idx < (kSplit ? 2 : 1) * Lay::kCBytes / 16; idx += kMmaThreads)
    reinterpret_cast<uint4*>(c_tile)[idx] = make_uint4(0, 0, 0, 0);
  for (int d = threadIdx.x; d < DQK; d += kMmaThreads) n_s[d] = 0.f;

  // Warp 0 owns the stabilisers and prepares each tile's gates one tile ahead.
  double m_prev = 0.0, r_prev = -static_cast<double>(INFINITY);
  GateRegs<L> gr;
  if (warp == 0) {
    load_gate_regs<L>(gr, ig, fg, p.i.ss, p.f.ss, 0, p.s, lane);
    prep_gates<L, false>(*gates(0), gr, 0, p.s, lane, m_prev, r_prev);
    if (n_tiles > 1) load_gate_regs<L>(gr, ig, fg, p.i.ss, p.f.ss, L, p.s, lane);
  }

  float cacc[kMt][DVT / 8][4];
#pragma unroll
  for (int mi = 0; mi < kMt; ++mi)
#pragma unroll
    for (int n = 0; n < DVT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) cacc[mi][n][e] = 0.f;

  for (int tile = 0; tile < n_tiles; ++tile) {
    const int st = tile & 1;
    const int t0 = tile * L;
    cp_async_wait<0>();
    __syncthreads();  // this tile's q, k, v and gates, and C_prev, n_prev are in shared memory
    if (tile + 1 < n_tiles) load_qkv(st ^ 1, t0 + L);  // its stage was last read before the barrier
    cp_async_commit();
    if (warp == 0 && tile + 1 < n_tiles) {
      prep_gates<L, false>(*gates(st ^ 1), gr, t0 + L, p.s, lane, m_prev, r_prev);
      if (tile + 2 < n_tiles) load_gate_regs<L>(gr, ig, fg, p.i.ss, p.f.ss, t0 + 2 * L, p.s, lane);
    }
    const TileGates<L>& gt = *gates(st);
    const unsigned char* qt = q_tile(st);
    const unsigned char* kt = k_tile(st);
    const uint32_t q_s = smem_addr(qt), k_s = smem_addr(kt), v_s = smem_addr(v_tile(st));
    const uint32_t c_s = smem_addr(c_tile), c_lo_s = c_s + Lay::kCBytes;

    // 1: S = Q K^T over the key tiles up to the warp's own.
    float s[L / 8][4];
#pragma unroll
    for (int n = 0; n < L / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < DQK / 16; ++kk) {
      uint32_t af[4];
      ldmatrix_x4(af, q_s + swizzled<DQK>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
      for (int jj = 0; jj < L / 16; ++jj) {
        if (jj > warp) continue;
        uint32_t r[4];
        ldmatrix_x4(r, k_s + swizzled<DQK>(jj * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
        mma_16816<T>(s[2 * jj], af, r[0], r[1]);
        mma_16816<T>(s[2 * jj + 1], af, r[2], r[3]);
      }
    }

    // P = S scale D, its row sums, and P rounded to the dtype as A fragments (pa[kk]: keys
    // 16 kk .. 16 kk + 15). Accumulator (n, e): row 16 warp + g + 8 (e / 2), key 8 n + 2 t + e % 2.
    int rl[2];
    float mm_r[2], den[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      rl[r] = warp * 16 + g + 8 * r;
      mm_r[r] = gt.mm[rl[r]];
      den[r] = 0.f;
    }
    // kModeDel also keeps P's remainder (pl): mlstm_bwd's di and df are held to f32 accuracy, and
    // they take dh . h from this h.
    constexpr bool kSplitP = kMode == kModeDel;
    uint32_t pa[L / 16][4], pl[L / 16][4];
#pragma unroll
    for (int n = 0; n < L / 8; ++n) {
      if (n / 2 <= warp) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = e >> 1, key = 8 * n + 2 * t + (e & 1);
          const float w = key <= rl[r] ? expf(gt.a[key] - mm_r[r]) : 0.f;
          const float v = s[n][e] * p.scale * w;
          s[n][e] = v;
          den[r] += v;
        }
      }
      pa[n / 2][2 * (n & 1)] = pack2<T>(s[n][0], s[n][1]);
      pa[n / 2][2 * (n & 1) + 1] = pack2<T>(s[n][2], s[n][3]);
      if constexpr (kSplitP) {
        const float2 h0 = unpack2<T>(pa[n / 2][2 * (n & 1)]), h1 = unpack2<T>(pa[n / 2][2 * (n & 1) + 1]);
        pl[n / 2][2 * (n & 1)] = pack2<T>(s[n][0] - h0.x, s[n][1] - h0.y);
        pl[n / 2][2 * (n & 1) + 1] = pack2<T>(s[n][2] - h1.x, s[n][3] - h1.y);
      }
    }

    // 2: o = Q C_prev (C_prev as k rows of the dtype, read with ldmatrix.trans).
    float o[DVT / 8][4];
#pragma unroll
    for (int n = 0; n < DVT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < DQK / 16; ++kk) {
      uint32_t af[4];
      ldmatrix_x4(af, q_s + swizzled<DQK>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
      for (int jj = 0; jj < DVT / 16; ++jj) {
        uint32_t r[4];
        const uint32_t off = swizzled<DVT>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), jj * 2 + (lane >> 4));
        ldmatrix_x4_trans(r, c_s + off);
        mma_16816<T>(o[2 * jj], af, r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], af, r[2], r[3]);
        if constexpr (kSplit) {
          ldmatrix_x4_trans(r, c_lo_s + off);
          mma_16816<T>(o[2 * jj], af, r[0], r[1]);
          mma_16816<T>(o[2 * jj + 1], af, r[2], r[3]);
        }
      }
    }
    // q . n_prev for the two rows: lane t takes 16-byte chunks t, t + 4, ... of each row.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float qn = 0.f;
#pragma unroll
      for (int c = t; c < DQK / 8; c += 4) {
        const uint4 raw = *reinterpret_cast<const uint4*>(qt + swizzled<DQK>(rl[r], c));
        const uint32_t w4[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 nn = *reinterpret_cast<const float2*>(n_s + c * 8 + 2 * e);
          const float2 qq = unpack2<T>(w4[e]);
          qn = fmaf(qq.x, nn.x, fmaf(qq.y, nn.y, qn));
        }
      }
      den[r] += __shfl_xor_sync(0xffffffffu, den[r], 1);
      den[r] += __shfl_xor_sync(0xffffffffu, den[r], 2);
      qn += __shfl_xor_sync(0xffffffffu, qn, 1);
      qn += __shfl_xor_sync(0xffffffffu, qn, 2);
      const float wi = p.scale * gt.inter[rl[r]];
      den[r] = fmaf(wi, qn, den[r]);
#pragma unroll
      for (int n = 0; n < DVT / 8; ++n) {
        o[n][2 * r] *= wi;
        o[n][2 * r + 1] *= wi;
      }
    }

    // 3: o += P V (v as key rows, read with ldmatrix.trans), then h.
#pragma unroll
    for (int kk = 0; kk < L / 16; ++kk) {
      if (kk > warp) continue;
#pragma unroll
      for (int jj = 0; jj < DVT / 16; ++jj) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, v_s + swizzled<DVT>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), jj * 2 + (lane >> 4)));
        mma_16816<T>(o[2 * jj], pa[kk], r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], pa[kk], r[2], r[3]);
        if constexpr (kSplitP) {
          mma_16816<T>(o[2 * jj], pl[kk], r[0], r[1]);
          mma_16816<T>(o[2 * jj + 1], pl[kk], r[2], r[3]);
        }
      }
    }
    if constexpr (kMode == kModeDel) {
      // mlstm_bwd: this block's share of dh . h per row (4 lanes a row), and sigma.
      const T* dhg = p.dh.head<const T>(b, h) + static_cast<int64_t>(dv0) * p.dh.se;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = t0 + rl[r];
        const bool in = row < p.s;
        const float nrm = row_norm(den[r], gt.emc[rl[r]]);
        const float inv = 1.f / (nrm + p.eps * gt.epsf[rl[r]]);
        float dot = 0.f;
        if (in) {
          const T* dhrow = dhg + static_cast<int64_t>(row) * p.dh.ss;
#pragma unroll
          for (int n = 0; n < DVT / 8; ++n) {
            const int64_t col = n * 8 + 2 * t;
            dot = fmaf(to_float(dhrow[col * p.dh.se]), o[n][2 * r] * inv, dot);
            dot = fmaf(to_float(dhrow[(col + 1) * p.dh.se]), o[n][2 * r + 1] * inv, dot);
          }
        }
        dot += __shfl_xor_sync(0xffffffffu, dot, 1);
        dot += __shfl_xor_sync(0xffffffffu, dot, 2);
        if (in && t == 0) {
          const int64_t at = static_cast<int64_t>(bh) * p.s + row;
          p.dh_dot[at * dv_tiles + dvt] = dot;
          if (dvt == 0) p.sigma[at] = row_sigma(den[r], gt.emc[rl[r]]);
        }
      }
    }
    T* hg = p.h.head<T>(b, h) + static_cast<int64_t>(dv0) * p.h.se;
#pragma unroll
    for (int r = 0; r < (kMode == kModeDel ? 0 : 2); ++r) {
      const int row = t0 + rl[r];
      if (row >= p.s) continue;
      const float nrm = row_norm(den[r], gt.emc[rl[r]]);
      const float inv = 1.f / (nrm + (kParallel ? p.eps * gt.epsf[rl[r]] : p.eps));
      T* hrow = hg + static_cast<int64_t>(row) * p.h.ss;
#pragma unroll
      for (int n = 0; n < DVT / 8; ++n) {
        const int col = n * 8 + 2 * t;
        const float v0 = o[n][2 * r] * inv, v1 = o[n][2 * r + 1] * inv;
        // store2 (attention_mma.cuh) written out: as a call, nvcc allocates this kernel's registers
        // differently.
        if (paths.out_pairs) {
          *reinterpret_cast<uint32_t*>(hrow + col) = pack2<T>(v0, v1);
        } else {
          hrow[static_cast<int64_t>(col) * p.h.se] = from_float<T>(v0);
          hrow[static_cast<int64_t>(col + 1) * p.h.se] = from_float<T>(v1);
        }
      }
      if constexpr (kMode == kModeParallel) {
        if (t == 0 && dvt == 0) {
          const float ef = gt.epsf[rl[r]];
          p.n_out.head<float>(b, h)[static_cast<int64_t>(row) * p.n_out.ss] =
              ef > 0.f ? fmaxf(fabsf(den[r]) / ef, gt.epar[rl[r]]) : INFINITY;
          p.m_out.head<float>(b, h)[static_cast<int64_t>(row) * p.m_out.ss] = gt.mpar[rl[r]];
        }
      }
    }
    if (kParallel && tile + 1 == n_tiles) break;  // the parallel form needs no state after the last tile
    __syncthreads();  // every warp is done with C_prev and n_prev

    // 4: C = gl C + (abar k)^T v. Warp w owns C rows (dqk) w DQK / 4 .. + DQK / 4 - 1.
    const float gl = gt.gl;
#pragma unroll
    for (int mi = 0; mi < kMt; ++mi)
#pragma unroll
      for (int n = 0; n < DVT / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) cacc[mi][n][e] *= gl;
#pragma unroll
    for (int kk = 0; kk < L / 16; ++kk) {
      if (t0 + kk * 16 >= p.s) break;  // keys past the sequence weigh 0
      const float w0 = gt.abar[kk * 16 + 2 * t], w1 = gt.abar[kk * 16 + 2 * t + 1];
      const float w8 = gt.abar[kk * 16 + 2 * t + 8], w9 = gt.abar[kk * 16 + 2 * t + 9];
      uint32_t af[kMt][4], al[kMt][4];
#pragma unroll
      for (int mi = 0; mi < kMt; ++mi) {
        // A = K^T (rows dqk, columns keys), stored as key rows: matrices (dqk 0-7, keys 0-7),
        // (dqk 8-15, keys 0-7), (dqk 0-7, keys 8-15), (dqk 8-15, keys 8-15), transposed on the way.
        const int krow = kk * 16 + (lane & 7) + ((lane >> 4) << 3);
        const int col = warp * (DQK / 4) + mi * 16 + (((lane >> 3) & 1) << 3);
        ldmatrix_x4_trans(af[mi], k_s + swizzled<DQK>(krow, col >> 3));
        scale_pair<T, kSplit>(af[mi][0], w0, w1, af[mi][0], al[mi][0]);
        scale_pair<T, kSplit>(af[mi][1], w0, w1, af[mi][1], al[mi][1]);
        scale_pair<T, kSplit>(af[mi][2], w8, w9, af[mi][2], al[mi][2]);
        scale_pair<T, kSplit>(af[mi][3], w8, w9, af[mi][3], al[mi][3]);
      }
#pragma unroll
      for (int jj = 0; jj < DVT / 16; ++jj) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, v_s + swizzled<DVT>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), jj * 2 + (lane >> 4)));
#pragma unroll
        for (int mi = 0; mi < kMt; ++mi) {
          mma_16816<T>(cacc[mi][2 * jj], af[mi], r[0], r[1]);
          mma_16816<T>(cacc[mi][2 * jj + 1], af[mi], r[2], r[3]);
          if constexpr (kSplit) {
            mma_16816<T>(cacc[mi][2 * jj], al[mi], r[0], r[1]);
            mma_16816<T>(cacc[mi][2 * jj + 1], al[mi], r[2], r[3]);
          }
        }
      }
    }
    // n = gl n + sum_u abar[u] k[u] (f32, in key order).
    for (int d = threadIdx.x; d < DQK; d += kMmaThreads) {
      float acc = 0.f;
      const int valid = min(L, p.s - t0);
      for (int u = 0; u < valid; ++u)
        acc = fmaf(gt.abar[u], tile_elem<T, DQK>(kt, u, d), acc);
      n_s[d] = fmaf(gl, n_s[d], acc);
    }
    // C rounded to the dtype for the next tile's q C_prev. Accumulator (mi, n, e): row
    // w DQK / 4 + 16 mi + g + 8 (e / 2), column 8 n + 2 t + e % 2.
#pragma unroll
    for (int mi = 0; mi < kMt; ++mi)
#pragma unroll
      for (int n = 0; n < DVT / 8; ++n)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = warp * (DQK / 4) + mi * 16 + g + 8 * r;
          const float c0 = cacc[mi][n][2 * r], c1 = cacc[mi][n][2 * r + 1];
          const uint32_t hi = pack2<T>(c0, c1);
          *reinterpret_cast<uint32_t*>(c_tile + swizzled<DVT>(row, n) + 4 * t) = hi;
          if constexpr (kSplit) {
            const float2 hf = unpack2<T>(hi);
            *reinterpret_cast<uint32_t*>(c_tile + Lay::kCBytes + swizzled<DVT>(row, n) + 4 * t) =
                pack2<T>(c0 - hf.x, c1 - hf.y);
          }
        }
  }

  if constexpr (!kParallel) {
    // The last state: C from the registers, n (one block of the head), m from warp 0.
    float* cg = p.c_last.head<float>(b, h) + static_cast<int64_t>(dv0) * p.c_last.se;
#pragma unroll
    for (int mi = 0; mi < kMt; ++mi)
#pragma unroll
      for (int n = 0; n < DVT / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = warp * (DQK / 4) + mi * 16 + g + 8 * (e >> 1);
          const int col = n * 8 + 2 * t + (e & 1);
          cg[static_cast<int64_t>(row) * p.c_last.ss + static_cast<int64_t>(col) * p.c_last.se] = cacc[mi][n][e];
        }
    if (dvt == 0) {
      __syncthreads();  // n's last update by other threads
      float* ng = p.n_last.head<float>(b, h);
      for (int d = threadIdx.x; d < DQK; d += kMmaThreads) ng[static_cast<int64_t>(d) * p.n_last.ss] = n_s[d];
      if (threadIdx.x == 0) *p.m_last.head<float>(b, h) = static_cast<float>(m_prev);
    }
  }
}

}  // namespace dnnb::cuda_kernels::mlstm
