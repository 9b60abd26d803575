// The shared-memory tiles and fragment helpers of the mma.sync attention kernels (sdpa_mma.cuh,
// sdpa_bwd_mma.cuh, mlstm_mma.cuh, mlstm_bwd_mma.cuh), over the wrappers of gemm_mma.cuh.
//
// Tiles hold rows of 16-bit elements; 16-byte chunk c of row r is stored at chunk c ^ (r & 7)
// (rows of 8 or more chunks) or c ^ ((r >> 1) & 3) (rows of 4 chunks), so the 8 rows one
// ldmatrix phase reads land in 8 different bank groups.
// Tiles are filled by 16-byte cp.async copies (zero-filled past the rows) when the operand's
// rows are 16-byte aligned with unit element stride, else element by element through registers
// (padded or transposed layouts; same tile, synchronous).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/gemm_mma.cuh"

namespace dnnb::cuda_kernels::attention {

// The block that load_tile fills a tile with: 4 warps.
inline constexpr int kMmaWarps = 4, kMmaThreads = 32 * kMmaWarps;

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of kCols 16-bit elements per row.
template <int kCols>
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  constexpr int kChunks = kCols / 8;
  static_assert(kChunks == 4 || kChunks % 8 == 0, "rows of 4 chunks or a multiple of 8");
  const int phys = kChunks >= 8 ? chunk ^ (row & 7) : chunk ^ ((row >> 1) & 3);
  return static_cast<uint32_t>(row * kCols * 2 + (phys << 4));
}

// Element (row, col) of a swizzled tile of kCols 16-bit columns, as f32 (one 32-bit byte offset).
template <typename T, int kCols>
__device__ __forceinline__ float tile_elem(const unsigned char* tile, int row, int col) {
  return to_float(*reinterpret_cast<const T*>(tile + (swizzled<kCols>(row, col >> 3) + (col & 7) * 2)));
}

// Rows [r0, r0 + kRows) of a [rows_total, kCols] operand (element (r, e) at base[r s_row + e
// s_col]) into a swizzled tile; rows past rows_total are zero. async: 16-byte cp.async copies
// (base 16-byte aligned, s_col 1, s_row a multiple of 8), else element loads and 16-byte stores.
template <int kRows, int kCols>
__device__ __forceinline__ void load_tile(unsigned char* tile, const uint16_t* base, int64_t s_row, int64_t s_col,
                                          int r0, int rows_total, bool async) {
  constexpr int kChunks = kCols / 8;
  static_assert(kRows * kChunks % kMmaThreads == 0, "whole passes of the block");
  const uint32_t tile_s = gemm::smem_addr(tile);
#pragma unroll 4
  for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kMmaThreads) {
    const int row = idx / kChunks, chunk = idx % kChunks;
    const int gr = r0 + row;
    const uint32_t off = swizzled<kCols>(row, chunk);
    if (async) {
      const bool inside = gr < rows_total;
      const uint16_t* src = inside ? base + static_cast<int64_t>(gr) * s_row + chunk * 8 : base;
      gemm::cp_async_16(tile_s + off, src, inside ? 16 : 0);
    } else {
      uint32_t e[8];
      const uint16_t* src = base + static_cast<int64_t>(gr) * s_row + static_cast<int64_t>(chunk * 8) * s_col;
#pragma unroll
      for (int j = 0; j < 8; ++j) e[j] = gr < rows_total ? src[j * s_col] : 0u;
      *reinterpret_cast<uint4*>(tile + off) =
          make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
    }
  }
}

// Two f32 values as one register of two 16-bit elements, the first in the low half (the
// lower k index of an mma fragment), each rounded to nearest even.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t bits;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&bits, &v, sizeof(bits));
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&bits, &v, sizeof(bits));
  }
  return bits;
}

// The two 16-bit elements of x (low half first) as floats.
template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t x) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return make_float2(__uint_as_float(x << 16), __uint_as_float(x & 0xffff0000u));
  } else {
    __half2 v;
    memcpy(&v, &x, sizeof(v));
    return __half22float2(v);
  }
}

// Two adjacent outputs of a row, rounded to T: one 4-byte store when `pairs`, else two.
template <typename T>
__device__ __forceinline__ void store2(T* row, int64_t col_stride, int col, float v0, float v1, bool pairs) {
  if (pairs) {
    *reinterpret_cast<uint32_t*>(row + col) = pack2<T>(v0, v1);
  } else {
    row[static_cast<int64_t>(col) * col_stride] = from_float<T>(v0);
    row[static_cast<int64_t>(col + 1) * col_stride] = from_float<T>(v1);
  }
}

// acc[n] += A B for one 16-row A fragment and kCols / 8 n-tiles of B read from a tile stored
// as rows of n with k inner (k_inner: ldmatrix), 16 k at chunk pair kk.
template <typename T, int kCols, int kNTiles>
__device__ __forceinline__ void mma_b_rows(float (&acc)[kNTiles][4], const uint32_t (&af)[4], uint32_t tile, int kk,
                                           int lane) {
#pragma unroll
  for (int jj = 0; jj < kNTiles / 2; ++jj) {
    uint32_t r[4];
    gemm::ldmatrix_x4(r, tile + swizzled<kCols>(jj * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
    gemm::mma_16816<T>(acc[2 * jj], af, r[0], r[1]);
    gemm::mma_16816<T>(acc[2 * jj + 1], af, r[2], r[3]);
  }
}

// acc[n] += A B for B read from a tile stored as rows of k with n inner (k_outer:
// ldmatrix.trans), k rows 16 kk .. 16 kk + 15.
template <typename T, int kCols, int kNTiles>
__device__ __forceinline__ void mma_b_cols(float (&acc)[kNTiles][4], const uint32_t (&af)[4], uint32_t tile, int kk,
                                           int lane) {
#pragma unroll
  for (int jj = 0; jj < kNTiles / 2; ++jj) {
    uint32_t r[4];
    gemm::ldmatrix_x4_trans(r,
                            tile + swizzled<kCols>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), jj * 2 + (lane >> 4)));
    gemm::mma_16816<T>(acc[2 * jj], af, r[0], r[1]);
    gemm::mma_16816<T>(acc[2 * jj + 1], af, r[2], r[3]);
  }
}

// acc = A B^T for the warp's 16 rows of tile a (kK elements a row) against all rows of tile b.
template <typename T, int kK, int kNTiles>
__device__ __forceinline__ void mma_rows_rows(float (&acc)[kNTiles][4], uint32_t a, uint32_t b, int warp, int lane) {
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[n][e] = 0.f;
#pragma unroll
  for (int kk = 0; kk < kK / 16; ++kk) {
    uint32_t af[4];
    gemm::ldmatrix_x4(af, a + swizzled<kK>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)));
    mma_b_rows<T, kK, kNTiles>(acc, af, b, kk, lane);
  }
}

// The A fragment of k-step kk from accumulators of 16 x 8 tiles 2 kk and 2 kk + 1, rounded to T.
template <typename T, int kNTiles>
__device__ __forceinline__ void a_from_acc(uint32_t (&af)[4], const float (&acc)[kNTiles][4], int kk) {
  af[0] = pack2<T>(acc[2 * kk][0], acc[2 * kk][1]);
  af[1] = pack2<T>(acc[2 * kk][2], acc[2 * kk][3]);
  af[2] = pack2<T>(acc[2 * kk + 1][0], acc[2 * kk + 1][1]);
  af[3] = pack2<T>(acc[2 * kk + 1][2], acc[2 * kk + 1][3]);
}

}  // namespace dnnb::cuda_kernels::attention
