// The f32 GEMMs.
//
// f32_fma (full f32, the default for f32 problems): a 128 x 128 block tile, K in steps of 16,
// 256 threads each computing an 8 x 8 piece as four 4 x 4 blocks (rows ty*4 and 64 + ty*4,
// columns tx*4 and 64 + tx*4): per k, two 16-byte shared loads of A and two of B feed 64 FMAs.
// Shared tiles are stored k-major (As[k][m], Bs[k][n]) so those loads are contiguous; the
// rows are padded by 4 floats to spread the transposing stores over the banks.
//
// tf32 (tf32=1): mma.sync.aligned.m16n8k8 with tf32 operands and f32 accumulation; a 128 x 128
// block tile, K in steps of 32, 8 warps as 2 (M) x 4 (N) of 64 x 32 each. Operands are rounded
// to tf32 (cvt.rna: to nearest, ties away, as cuBLAS and torch do) when stored to shared
// memory, where both tiles are kept with k contiguous (As[m][k], Bs[n][k]) and rows padded to
// 36 floats: a fragment load (row g, column t of an 8 x 4 block, lane = 4g + t) then touches
// banks 4g + t, all different.
//
// Both load their tiles element-wise into registers for any strides (consecutive threads along
// the operand's smaller stride, so unit-stride operands coalesce) with zeros outside the
// matrix, and double-buffer: the next tile's loads are issued before the current tile's
// arithmetic and stored to the other buffer after it.
#pragma once
#include <cstdint>

#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels::gemm {

struct F32Args {
  const float* a;
  int64_t a_batch, a_m, a_k;
  const float* b;
  int64_t b_batch, b_k, b_n;
  const float* bias;
  int64_t bias_stride;
  float* y;
  int64_t y_batch, y_m;
  int m, n, k;
  int tiles_m, tiles_n;
  bool a_k_fast;  // A's k stride is the smaller: consecutive threads load along k
  bool b_k_fast;  // B's k stride is the smaller
  bool y_vec4;    // 4 adjacent outputs from a column multiple of 4 may be stored as one float4
};

inline constexpr int kF32Threads = 256;
inline constexpr int kF32BM = 128, kF32BN = 128;


// ---------------------------------------------------------------------------------------------
// f32_fma

inline constexpr int kFmaBK = 16;
inline constexpr int kFmaPad = 4;  // As[k][128 + 4]: rows stay 16-byte aligned (132 * 4 bytes)

using FmaWalk = TileWalk<128, kFmaBK, kF32Threads>;

// Stores fetched elements into a [k][row] tile.
__device__ __forceinline__ void f32_store_tile(float (*tile)[kF32BM + kFmaPad], const float (&v)[FmaWalk::kCount],
                                               const FmaWalk& w) {
#pragma unroll
  for (int i = 0; i < FmaWalk::kCount; ++i) tile[w.kq + i * w.dk][w.r + i * w.dr] = v[i];
}

__device__ __forceinline__ void f32_store4(float* row, int col, int n, const float (&v)[4], const float (&bias)[4],
                                           bool vec4) {
  if (vec4 && col + 3 < n) {
    *reinterpret_cast<float4*>(row + col) = make_float4(v[0] + bias[0], v[1] + bias[1], v[2] + bias[2], v[3] + bias[3]);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (col + j < n) row[col + j] = v[j] + bias[j];
  }
}

__global__ void __launch_bounds__(kF32Threads, 1) gemm_f32_fma_kernel(const F32Args p) {
  __shared__ __align__(16) float As[2][kFmaBK][kF32BM + kFmaPad];
  __shared__ __align__(16) float Bs[2][kFmaBK][kF32BN + kFmaPad];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  int tm, tn;
  grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * kF32BM, n0 = tn * kF32BN;
  const int batch = blockIdx.z;
  const float* a = p.a + static_cast<int64_t>(batch) * p.a_batch;
  const float* b = p.b + static_cast<int64_t>(batch) * p.b_batch;
  const int k_tiles = (p.k + kFmaBK - 1) / kFmaBK;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

  float va[FmaWalk::kCount], vb[FmaWalk::kCount];
  const FmaWalk wa(tid, p.a_k_fast), wb(tid, p.b_k_fast);
  // B's tile rows are N: element (n, k) at n * b_n + k * b_k.
  auto fetch = [&](int kt) {
    wa.fetch(va, a, p.a_m, p.a_k, p.m, p.k, m0, kt * kFmaBK);
    wb.fetch(vb, b, p.b_n, p.b_k, p.n, p.k, n0, kt * kFmaBK);
  };
  auto store = [&](int buf) {
    f32_store_tile(As[buf], va, wa);
    f32_store_tile(Bs[buf], vb, wb);
  };
  fetch(0);
  store(0);
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const bool more = kt + 1 < k_tiles;
    if (more) fetch(kt + 1);
    const int buf = kt & 1;
#pragma unroll
    for (int k = 0; k < kFmaBK; ++k) {
      float ar[8], br[8];
      *reinterpret_cast<float4*>(ar) = *reinterpret_cast<const float4*>(&As[buf][k][ty * 4]);
      *reinterpret_cast<float4*>(ar + 4) = *reinterpret_cast<const float4*>(&As[buf][k][64 + ty * 4]);
      *reinterpret_cast<float4*>(br) = *reinterpret_cast<const float4*>(&Bs[buf][k][tx * 4]);
      *reinterpret_cast<float4*>(br + 4) = *reinterpret_cast<const float4*>(&Bs[buf][k][64 + tx * 4]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
    if (more) store((kt + 1) & 1);  // that buffer was last read at step kt - 1, before the barrier
    __syncthreads();
  }

  float* y = p.y + static_cast<int64_t>(batch) * p.y_batch;
#pragma unroll
  for (int jh = 0; jh < 2; ++jh) {
    const int col = n0 + jh * 64 + tx * 4;
    float bias[4] = {0.f, 0.f, 0.f, 0.f};
    if (p.bias != nullptr)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (col + j < p.n) bias[j] = p.bias[static_cast<int64_t>(col + j) * p.bias_stride];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int row = m0 + (i / 4) * 64 + ty * 4 + i % 4;
      if (row >= p.m) continue;
      const float v[4] = {acc[i][jh * 4], acc[i][jh * 4 + 1], acc[i][jh * 4 + 2], acc[i][jh * 4 + 3]};
      f32_store4(y + static_cast<int64_t>(row) * p.y_m, col, p.n, v, bias, p.y_vec4);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// tf32

inline constexpr int kTf32BK = 32;
inline constexpr int kTf32Ld = kTf32BK + 4;  // 36 floats per shared row
inline constexpr int kTf32TileFloats = 128 * kTf32Ld;
inline constexpr int kTf32Smem = 2 * 2 * kTf32TileFloats * 4;  // 2 buffers of A and B: 73,728 bytes

__device__ __forceinline__ uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

using Tf32Walk = TileWalk<128, kTf32BK, kF32Threads>;

// Stores fetched elements as tf32 into a [row][k] tile.
__device__ __forceinline__ void tf32_store_tile(uint32_t* tile, const float (&v)[Tf32Walk::kCount], const Tf32Walk& w) {
#pragma unroll
  for (int i = 0; i < Tf32Walk::kCount; ++i) tile[(w.r + i * w.dr) * kTf32Ld + w.kq + i * w.dk] = to_tf32(v[i]);
}

__global__ void __launch_bounds__(kF32Threads, 1) gemm_tf32_kernel(const F32Args p) {
  extern __shared__ __align__(16) uint32_t tiles[];  // [buffer][A, B][128][36]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 2, wn = warp & 3;
  const int g = lane >> 2, t = lane & 3;
  int tm, tn;
  grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * kF32BM, n0 = tn * kF32BN;
  const int batch = blockIdx.z;
  const float* a = p.a + static_cast<int64_t>(batch) * p.a_batch;
  const float* b = p.b + static_cast<int64_t>(batch) * p.b_batch;
  const int k_tiles = (p.k + kTf32BK - 1) / kTf32BK;

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  float va[Tf32Walk::kCount], vb[Tf32Walk::kCount];
  const Tf32Walk wa(tid, p.a_k_fast), wb(tid, p.b_k_fast);
  auto fetch = [&](int kt) {
    wa.fetch(va, a, p.a_m, p.a_k, p.m, p.k, m0, kt * kTf32BK);
    wb.fetch(vb, b, p.b_n, p.b_k, p.n, p.k, n0, kt * kTf32BK);
  };
  auto store = [&](int buf) {
    tf32_store_tile(tiles + (2 * buf) * kTf32TileFloats, va, wa);
    tf32_store_tile(tiles + (2 * buf + 1) * kTf32TileFloats, vb, wb);
  };
  fetch(0);
  store(0);
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const bool more = kt + 1 < k_tiles;
    if (more) fetch(kt + 1);
    const uint32_t* As = tiles + (2 * (kt & 1)) * kTf32TileFloats;
    const uint32_t* Bs = As + kTf32TileFloats;
#pragma unroll
    for (int kk = 0; kk < kTf32BK; kk += 8) {
      // Fragments (PTX ISA, mma.m16n8k8 .tf32): A (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4);
      // B (k t, col g), (t + 4, g); accumulators as for m16n8k16.
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t* row = As + (wm * 64 + i * 16 + g) * kTf32Ld + kk + t;
        af[i][0] = row[0];
        af[i][1] = row[8 * kTf32Ld];
        af[i][2] = row[4];
        af[i][3] = row[8 * kTf32Ld + 4];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t* col = Bs + (wn * 32 + j * 8 + g) * kTf32Ld + kk + t;
        bf[j][0] = col[0];
        bf[j][1] = col[4];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_1688_tf32(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
    if (more) store((kt + 1) & 1);
    __syncthreads();
  }

  float* y = p.y + static_cast<int64_t>(batch) * p.y_batch;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int col = n0 + wn * 32 + j * 8 + 2 * t;
    float b0 = 0.f, b1 = 0.f;
    if (p.bias != nullptr) {
      if (col < p.n) b0 = p.bias[static_cast<int64_t>(col) * p.bias_stride];
      if (col + 1 < p.n) b1 = p.bias[static_cast<int64_t>(col + 1) * p.bias_stride];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm * 64 + i * 16 + g + h * 8;
        if (row >= p.m) continue;
        float* yr = y + static_cast<int64_t>(row) * p.y_m;
        if (col < p.n) yr[col] = acc[i][j][2 * h] + b0;
        if (col + 1 < p.n) yr[col + 1] = acc[i][j][2 * h + 1] + b1;
      }
  }
}

}  // namespace dnnb::cuda_kernels::gemm
