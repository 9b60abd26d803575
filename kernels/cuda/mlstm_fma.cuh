// The mLSTM forward on the FMA units, every dtype (f32 always; f16/bf16 at head dims the
// tensor-core kernel does not take), for mlstm_chunkwise, mlstm (kModeParallel) and mlstm_bwd's
// dh . h (kModeDel); the recurrence is in mlstm_common.cuh. All arithmetic in f32; q, k, v are converted on load.
//
// One block of 4 warps per (batch, head, 32 columns of v): it walks the sequence in tiles of 32
// positions with the state C (DQK x 32) and n (DQK) in shared memory, f32. Per tile: q, k, v to
// shared memory (rows padded by one float so that a warp reading one column of k across 32 keys
// hits 32 banks), P = scale (q k^T) D, the rows' sums and q . n_prev (warp w: rows w, w + 4, ...,
// one warp reduction each), h = (scale inter[p] q C_prev + P v) / (max(|den|, exp(-m_comb)) +
// eps), then C = gl C + sum_u abar[u] k[u] v[u]^T and n likewise. Warp 0 prepares the gates.
#pragma once
#include "kernels/cuda/mlstm_common.cuh"

namespace dnnb::cuda_kernels::mlstm {

inline constexpr int kFmaL = 32, kFmaThreads = 128, kFmaDvt = 32, kFmaMaxDqk = 256;

struct FmaLayout {
  int ld;  // padded row of q and k (floats)
  size_t q, k, v, c, n, pm, gates, bytes;
};

inline FmaLayout fma_layout(int dqk) {
  FmaLayout l;
  l.ld = dqk + 1;
  l.q = 0;
  l.k = l.q + sizeof(float) * kFmaL * l.ld;
  l.v = l.k + sizeof(float) * kFmaL * l.ld;
  l.c = l.v + sizeof(float) * kFmaL * kFmaDvt;
  l.n = l.c + sizeof(float) * dqk * kFmaDvt;
  l.pm = l.n + sizeof(float) * dqk;
  l.gates = l.pm + sizeof(float) * kFmaL * (kFmaL + 1);
  l.bytes = l.gates + (sizeof(TileGates<kFmaL>) + 15) / 16 * 16;
  return l;
}

template <typename T>
__device__ __forceinline__ float load_elem(const T* base, int64_t idx) {
  return to_float(base[idx]);
}

template <typename T, int kMode>
__global__ void __launch_bounds__(kFmaThreads) mlstm_fwd_fma_kernel(const MlstmArgs p, const FmaLayout lay) {
  constexpr bool kParallel = kMode != kModeChunk;
  constexpr int L = kFmaL, DVT = kFmaDvt;
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int dv_tiles = (p.dv + DVT - 1) / DVT;
  const int dvt = static_cast<int>(blockIdx.x) % dv_tiles;
  const int bh = static_cast<int>(blockIdx.x) / dv_tiles;
  const int b = bh / p.heads, h = bh % p.heads;
  const int dv0 = dvt * DVT;
  const int dqk = p.dqk, ld = lay.ld;

  float* q_s = reinterpret_cast<float*>(smem + lay.q);
  float* k_s = reinterpret_cast<float*>(smem + lay.k);
  float* v_s = reinterpret_cast<float*>(smem + lay.v);
  float* c_s = reinterpret_cast<float*>(smem + lay.c);
  float* n_s = reinterpret_cast<float*>(smem + lay.n);
  float* p_s = reinterpret_cast<float*>(smem + lay.pm);  // P, [L][L + 1]
  TileGates<L>& gt = *reinterpret_cast<TileGates<L>*>(smem + lay.gates);

  const T* qg = p.q.head<const T>(b, h);
  const T* kg = p.k.head<const T>(b, h);
  const T* vg = p.v.head<const T>(b, h);
  const float* ig = p.i.head<const float>(b, h);
  const float* fg = p.f.head<const float>(b, h);

  for (int idx = threadIdx.x; idx < dqk * DVT; idx += kFmaThreads) c_s[idx] = 0.f;
  for (int d = threadIdx.x; d < dqk; d += kFmaThreads) n_s[d] = 0.f;
  double m_prev = 0.0, r_prev = -static_cast<double>(INFINITY);  // warp 0's
  const int n_tiles = (p.s + L - 1) / L;
  const int cols = min(DVT, p.dv - dv0);

  for (int tile = 0; tile < n_tiles; ++tile) {
    const int t0 = tile * L;
    const int valid = min(L, p.s - t0);
    for (int idx = threadIdx.x; idx < L * dqk; idx += kFmaThreads) {
      const int r = idx / dqk, e = idx % dqk;
      const bool in = r < valid;
      const int64_t row = t0 + r;
      q_s[r * ld + e] = in ? load_elem(qg, row * p.q.ss + e * p.q.se) : 0.f;
      k_s[r * ld + e] = in ? load_elem(kg, row * p.k.ss + e * p.k.se) : 0.f;
    }
    for (int idx = threadIdx.x; idx < L * DVT; idx += kFmaThreads) {
      const int r = idx / DVT, e = idx % DVT;
      const int64_t row = t0 + r;
      v_s[idx] = r < valid && e < cols ? load_elem(vg, row * p.v.ss + static_cast<int64_t>(dv0 + e) * p.v.se) : 0.f;
    }
    if (warp == 0) {
      GateRegs<L> gr;
      load_gate_regs<L>(gr, ig, fg, p.i.ss, p.f.ss, t0, p.s, lane);
      prep_gates<L, true>(gt, gr, t0, p.s, lane, m_prev, r_prev);
    }
    __syncthreads();

    // P[p][u] = scale (q_p . k_u) D[p, u]: lane u, rows warp + 4 j.
    for (int j = 0; j < L / 4; ++j) {
      const int r = warp + 4 * j;
      float dot = 0.f;
      if (lane <= r) {
        for (int e = 0; e < dqk; ++e) dot = fmaf(q_s[r * ld + e], k_s[lane * ld + e], dot);
        // D from the hi + lo parts by a float64 exp, rounded once: h's normaliser can be a small
        // difference of the row's terms, and a few ulps of D move h by more than the f32 bound.
        const double x = (static_cast<double>(gt.a[lane]) + gt.a_lo[lane]) -
                         (static_cast<double>(gt.mm[r]) + gt.mm_lo[r]);
        dot *= p.scale * static_cast<float>(exp(x));
      }
      p_s[r * (L + 1) + lane] = dot;
    }
    __syncwarp();
    // Rows warp + 4 j: den and h (lane: column), from P (this warp's rows only: no barrier).
    for (int j = 0; j < L / 4; ++j) {
      const int r = warp + 4 * j;
      float rowsum = p_s[r * (L + 1) + lane];
      float qn = 0.f;
      for (int e = lane; e < dqk; e += 32) qn = fmaf(q_s[r * ld + e], n_s[e], qn);
      for (int o = 16; o > 0; o /= 2) {
        rowsum += __shfl_xor_sync(0xffffffffu, rowsum, o);
        qn += __shfl_xor_sync(0xffffffffu, qn, o);
      }
      const float wi = p.scale * gt.inter[r];
      const float den = fmaf(wi, qn, rowsum);
      float qc = 0.f;
      for (int e = 0; e < dqk; ++e) qc = fmaf(q_s[r * ld + e], c_s[e * DVT + lane], qc);
      float acc = qc * wi;
      for (int u = 0; u <= r; ++u) acc = fmaf(p_s[r * (L + 1) + u], v_s[u * DVT + lane], acc);
      const int row = t0 + r;
      if (row < p.s) {
        const float nrm = row_norm(den, gt.emc[r]);
        const float y = acc / (nrm + (kParallel ? p.eps * gt.epsf[r] : p.eps));
        if constexpr (kMode == kModeDel) {
          // mlstm_bwd: this block's share of dh . h for the row (rows are warp-uniform), and sigma.
          float dot = lane < cols ? to_float(p.dh.head<const T>(b, h)[static_cast<int64_t>(row) * p.dh.ss +
                                                                      static_cast<int64_t>(dv0 + lane) * p.dh.se]) *
                                        y
                                  : 0.f;
          for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
          if (lane == 0) {
            const int64_t at = static_cast<int64_t>(bh) * p.s + row;
            p.dh_dot[at * dv_tiles + dvt] = dot;
            if (dvt == 0) p.sigma[at] = row_sigma(den, gt.emc[r]);
          }
        } else if (lane < cols) {
          p.h.head<T>(b, h)[static_cast<int64_t>(row) * p.h.ss + static_cast<int64_t>(dv0 + lane) * p.h.se] =
              from_float<T>(y);
        }
        if constexpr (kMode == kModeParallel) {
          if (lane == 0 && dvt == 0) {
            const float ef = gt.epsf[r];
            p.n_out.head<float>(b, h)[static_cast<int64_t>(row) * p.n_out.ss] =
                ef > 0.f ? fmaxf(fabsf(den) / ef, gt.epar[r]) : INFINITY;
            p.m_out.head<float>(b, h)[static_cast<int64_t>(row) * p.m_out.ss] = gt.mpar[r];
          }
        }
      }
    }
    __syncthreads();  // C_prev and n_prev are read
    // C = gl C + sum_u abar[u] k[u] v[u]^T (thread: column lane, rows warp + 4 j); n likewise.
    const float gl = gt.gl;
    for (int d = warp; d < dqk; d += 4) {
      float acc = 0.f;
      for (int u = 0; u < valid; ++u) acc = fmaf(gt.abar[u] * k_s[u * ld + d], v_s[u * DVT + lane], acc);
      c_s[d * DVT + lane] = fmaf(gl, c_s[d * DVT + lane], acc);
    }
    for (int d = threadIdx.x; d < dqk; d += kFmaThreads) {
      float acc = 0.f;
      for (int u = 0; u < valid; ++u) acc = fmaf(gt.abar[u], k_s[u * ld + d], acc);
      n_s[d] = fmaf(gl, n_s[d], acc);
    }
    __syncthreads();  // the tile's q, k, v, gates are free for the next tile
  }

  if constexpr (!kParallel) {
    float* cg = p.c_last.head<float>(b, h);
    for (int idx = threadIdx.x; idx < dqk * DVT; idx += kFmaThreads) {
      const int d = idx / DVT, e = idx % DVT;
      if (e < cols)
        cg[static_cast<int64_t>(d) * p.c_last.ss + static_cast<int64_t>(dv0 + e) * p.c_last.se] = c_s[idx];
    }
    if (dvt == 0) {
      float* ng = p.n_last.head<float>(b, h);
      for (int d = threadIdx.x; d < dqk; d += kFmaThreads) ng[static_cast<int64_t>(d) * p.n_last.ss] = n_s[d];
      if (threadIdx.x == 0) *p.m_last.head<float>(b, h) = static_cast<float>(m_prev);
    }
  }
}

}  // namespace dnnb::cuda_kernels::mlstm
