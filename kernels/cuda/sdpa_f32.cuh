// The f32-FMA attention kernels' building blocks, and the forward kernel for f32 problems and
// for head dims the tensor-core kernel does not take (any D, Dv <= 256, any dtype, loaded to
// f32): plain 32 x 32 tiles in shared memory, correctness first.
//
// A block of 256 threads; thread (a, sub) = (tid / 8, tid % 8). Score tiles are 32 rows x 32
// keys: thread (a, sub) computes row a's keys sub + 8 k (k < 4). Row vectors of up to C
// elements (a row of o, dq, or a key's dk, dv) are held 8 threads to a row: element
// sub + 8 c (c < C / 8) in registers, C = 64, 128 or 256 the smallest that holds D and Dv.
// Shared tiles are f32 with a row stride of E + 1: the 8 rows a warp reads at one column fall
// in different banks.
#pragma once
#include "kernels/cuda/sdpa_common.cuh"

namespace dnnb::cuda_kernels::sdpa {

inline constexpr int kTile = 32;            // query rows and keys per tile
inline constexpr int kF32Threads = 256;     // 8 threads per row of a tile
inline constexpr int kScoreLd = kTile + 1;  // row stride of a tile of scores in shared memory

// The register capacity for head dims d and dv (both <= 256).
inline int f32_capacity(int d, int dv) {
  const int m = d > dv ? d : dv;
  return m <= 64 ? 64 : m <= 128 ? 128 : 256;
}

// Rows [r0, r0 + 32) of a [rows_total, cols] matrix with element (r, e) at base[r s_row + e s_col]
// into shared f32 at row stride cols + 1; rows past rows_total read 0.
template <typename T>
__device__ __forceinline__ void load_rows_f32(float* dst, const T* base, int64_t s_row, int64_t s_col, int r0,
                                              int rows_total, int cols) {
  const int ld = cols + 1;
  for (int idx = threadIdx.x; idx < kTile * cols; idx += kF32Threads) {
    const int r = idx / cols, e = idx - r * cols;
    const int gr = r0 + r;
    dst[r * ld + e] =
        gr < rows_total ? to_float(base[static_cast<int64_t>(gr) * s_row + static_cast<int64_t>(e) * s_col]) : 0.f;
  }
}

// out[k] = x_a . y_(sub + 8 k) over `len` elements, x and y tiles at row stride len + 1.
__device__ __forceinline__ void dot4(float (&out)[4], const float* x, const float* y, int len, int a, int sub) {
  const int ld = len + 1;
  const float* xr = x + a * ld;
#pragma unroll
  for (int k = 0; k < 4; ++k) out[k] = 0.f;
  for (int e = 0; e < len; ++e) {
    const float xv = xr[e];
#pragma unroll
    for (int k = 0; k < 4; ++k) out[k] = fmaf(xv, y[(sub + 8 * k) * ld + e], out[k]);
  }
}

// Reductions over the 8 threads of a row (lanes 8 a' .. 8 a' + 7 of a warp).
__device__ __forceinline__ float row8_max(float v) {
#pragma unroll
  for (int o = 1; o < 8; o *= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float row8_sum(float v) {
#pragma unroll
  for (int o = 1; o < 8; o *= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Block b of a kernel over (batch x heads) x `blocks` row blocks: the row block counted from the
// end (causal: the longest rows first) and the (batch, head) pair.
__device__ __forceinline__ void block_of(int blocks, int heads_total, int& row_block, int& bh) {
  row_block = blocks - 1 - static_cast<int>(blockIdx.x) / heads_total;
  bh = static_cast<int>(blockIdx.x) % heads_total;
}

// ---------------------------------------------------------------------------------------------
// The forward: one block per (batch, head, 32 query rows), an online softmax over 32-key tiles.
// Shared memory: q [32][D+1], k [32][D+1], v [32][Dv+1], p [32][33] floats.

inline size_t fwd_f32_smem_bytes(int d, int dv) {
  return sizeof(float) * (static_cast<size_t>(kTile) * (2 * (d + 1) + (dv + 1)) + kTile * kScoreLd);
}

template <typename T, int C>
__global__ void __launch_bounds__(kF32Threads) sdpa_fwd_f32_kernel(const Attn p, int m_blocks) {
  extern __shared__ float smem_f32[];
  const int ldq = p.d + 1, ldv = p.dv + 1;
  float* qs = smem_f32;
  float* ks = qs + kTile * ldq;
  float* vs = ks + kTile * ldq;
  float* ps = vs + kTile * ldv;
  const int a = threadIdx.x >> 3, sub = threadIdx.x & 7;
  int mb, bh;
  block_of(m_blocks, p.batch * p.heads, mb, bh);
  const int b = bh / p.heads, h = bh % p.heads, kvh = h / p.group;
  const int m0 = mb * kTile, i = m0 + a;
  const T* qg = p.q.head<T>(b, h);
  const T* kg = p.k.head<T>(b, kvh);
  const T* vg = p.v.head<T>(b, kvh);
  load_rows_f32(qs, qg, p.q.ss, p.q.se, m0, p.sq, p.d);
  int lo, hi;
  key_range(p, m0, min(m0 + kTile, p.sq) - 1, lo, hi);

  float o[C / 8];
#pragma unroll
  for (int c = 0; c < C / 8; ++c) o[c] = 0.f;
  float m = -INFINITY, l = 0.f;
  for (int j0 = lo / kTile * kTile; j0 < hi; j0 += kTile) {
    __syncthreads();  // every thread is done with the previous tile (and q is loaded)
    load_rows_f32(ks, kg, p.k.ss, p.k.se, j0, p.sk, p.d);
    load_rows_f32(vs, vg, p.v.ss, p.v.se, j0, p.sk, p.dv);
    __syncthreads();
    float s[4];
    dot4(s, qs, ks, p.d, a, sub);
    float mx = m;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float dcap;
      s[k] = final_score<T>(p, s[k], i, j0 + sub + 8 * k, dcap);
      mx = fmaxf(mx, s[k]);
    }
    mx = row8_max(mx);
    const float shift = row_shift(mx);
    const float alpha = m == -INFINITY ? 0.f : exp2f(row_shift(m) - shift);
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float pk = exp2f(fmaf(s[k], kLog2e, -shift));
      ps[a * kScoreLd + sub + 8 * k] = pk;
      sum += pk;
    }
    l = l * alpha + row8_sum(sum);
    m = mx;
    __syncwarp();  // row a's p, written by its 8 threads of this warp
#pragma unroll
    for (int c = 0; c < C / 8; ++c) o[c] *= alpha;
    for (int jj = 0; jj < kTile; ++jj) {
      const float pj = ps[a * kScoreLd + jj];
      const float* vr = vs + jj * ldv;
#pragma unroll
      for (int c = 0; c < C / 8; ++c)
        if (sub + 8 * c < p.dv) o[c] = fmaf(pj, vr[sub + 8 * c], o[c]);
    }
  }
  if (i >= p.sq) return;
  T* og = p.o.head<T>(b, h) + static_cast<int64_t>(i) * p.o.ss;
#pragma unroll
  for (int c = 0; c < C / 8; ++c) {
    const int e = sub + 8 * c;
    if (e < p.dv) og[static_cast<int64_t>(e) * p.o.se] = from_float<T>(l > 0.f ? o[c] / l : 0.f);
  }
  if (sub == 0) p.lse.head<float>(b, h)[static_cast<int64_t>(i) * p.lse.ss] = row_lse(m, l);
}

}  // namespace dnnb::cuda_kernels::sdpa
