// The 8-bit GEMMs of matmul_i8 (s8 x s8 -> s32, torch._int_mm) and matmul_f8 (e4m3/e5m2 with f32
// scales -> bf16, f16 or f32, torch._scaled_mm): their interface (Gemm8Call), the epilogue both
// kernels share, and the mma.sync kernel. Two kernels take a product (docs/cuda.md, "8-bit
// GEMMs"):
//   sm90a/gemm_wgmma.cu  wgmma fed by TMA on compute capability 9.0, for products of at least
//                   64 x 64 whose rows TMA can describe (a and b both K-major, 16-byte aligned
//                   with row strides of whole 16 bytes), or that run_gemm8 first packs so (a
//                   row-major b copied K-contiguous into the workspace).
//   this file       mma.sync m16n8k32 (sm_89 and later) for the rest (M or N below 64, other
//                   devices): any strides (b N-major, padded rows, odd K), any M, N, K.
//
// mma.sync kernel: block tile 128 (M) x 128 (N), K in steps of 128 (one 128-byte row of 8-bit
// elements); 8 warps as 2 (M) x 4 (N), each owning 64 x 32 of the output (4 x 4 mma tiles).
// Shared memory tiles are K-major for both operands (the 8-bit mma takes no transposed
// fragment, and ldmatrix cannot transpose bytes): 128 rows of 128 bytes, 16-byte chunk c of row
// r at chunk c ^ (r & 7), gemm_mma.cuh's k_inner order and swizzle in bytes. A k-step of 32 bytes
// is two chunks, so the ldmatrix addressing is gemm_mma.cuh's for 16-bit k-steps of 16: matrix
// (rows 0-7, bytes 0-15) gives lane 4g + t the bytes 4t .. 4t + 3 of row g, which is m16n8k32's
// A register a0 (row g, k 4t .. 4t + 3), and likewise a1..a3 and B's b0, b1 (PTX ISA, "Matrix
// Fragments for mma.m16n8k32").
// Two ways to fill the tiles, as gemm_mma.cuh:
//   fast     both operands K-contiguous, 16-byte aligned, row strides whole 16 bytes: 16-byte
//            cp.async copies, the bytes past K zero-filled (src-size), 4 stages in flight.
//   general  byte loads into registers for any strides (b N-major: consecutive threads read
//            consecutive n), packed into 16-byte K-major chunks, 2 stages.
// FP8 accumulation: Hopper's FP8 tensor-core accumulation keeps fewer bits than f32 (what
// cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0, torch's use_fast_accum=False, avoid), so the
// tensor cores sum at most 128 products from zero (the wgmma kernel: a k tile; this one: 64, half
// a k tile) before they are added to f32 registers. s8 products are exact in s32.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "kernels/cuda/gemm_mma.cuh"

namespace dnnb::cuda_kernels {

// One 8-bit product y = (a b) x scales: a [M, K] with element (m, k) at a + m*a_m + k*a_k,
// b [K, N] with (k, n) at b + k*b_k + n*b_n, y [M, N] with (m, n) at y + m*y_m + n; strides in
// elements, pointers with the tensors' offsets applied. For f8 inputs the f32 product of row m
// and column n is multiplied by scale_a[m * scale_a_stride] * scale_b[n * scale_b_stride]
// (stride 0: one scale for the tensor, 1: torch's row-wise [M, 1] and [1, N]) before its one
// rounding to y.
struct Gemm8Call {
  DType a_dtype = DType::i8;     // a: i8, f8_e4m3fn or f8_e5m2
  DType b_dtype = DType::i8;     // b: i8 with an i8 a; an FP8 type with an FP8 a (not both e5m2)
  DType out_dtype = DType::i32;  // y: i32 for i8; f32, bf16 or f16 for the FP8 types
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_m = 0, a_k = 0;
  const void* b = nullptr;
  int64_t b_k = 0, b_n = 0;
  void* y = nullptr;
  int64_t y_m = 0;
  const float* scale_a = nullptr;
  int64_t scale_a_stride = 0;
  const float* scale_b = nullptr;
  int64_t scale_b_stride = 0;
};

// The wgmma kernel (sm90a/gemm_wgmma.cu): whether it takes this product on this device, and its
// launch.
bool gemm8_wgmma_applies(const Gemm8Call& c, const CudaDevice& device);
Status launch_gemm8_wgmma(const CudaDevice& device, const Gemm8Call& c);

// What the epilogue of either kernel needs: where y is and how an accumulator becomes y.
struct Gemm8Out {
  void* y;
  int64_t y_m;
  int m, n;
  DType out;     // i32, f32, bf16 or f16
  bool y_pairs;  // two adjacent outputs of a row may be stored as one access (alignment)
  const float* scale_a;
  int64_t scale_a_stride;
  const float* scale_b;
  int64_t scale_b_stride;
};

inline Gemm8Out gemm8_out(const Gemm8Call& c) {
  const int64_t size = c.out_dtype == DType::i32 || c.out_dtype == DType::f32 ? 4 : 2;
  Gemm8Out o{};
  o.y = c.y;
  o.y_m = c.y_m;
  o.m = static_cast<int>(c.m);
  o.n = static_cast<int>(c.n);
  o.out = c.out_dtype;
  o.y_pairs = reinterpret_cast<uintptr_t>(c.y) % (2 * size) == 0 && (c.m == 1 || c.y_m % 2 == 0);
  o.scale_a = c.scale_a;
  o.scale_a_stride = c.scale_a_stride;
  o.scale_b = c.scale_b;
  o.scale_b_stride = c.scale_b_stride;
  return o;
}

// Outputs (row, col) and (row, col + 1) of y from s32 accumulators (i8 products: stored as is).
__device__ __forceinline__ void gemm8_store(const Gemm8Out& o, int row, int col, int32_t v0, int32_t v1) {
  if (row >= o.m) return;
  int32_t* y = static_cast<int32_t*>(o.y) + static_cast<int64_t>(row) * o.y_m;
  if (o.y_pairs && col + 1 < o.n) {
    *reinterpret_cast<int2*>(y + col) = make_int2(v0, v1);
  } else {
    if (col < o.n) y[col] = v0;
    if (col + 1 < o.n) y[col + 1] = v1;
  }
}

// The scales of an output row and column (FP8 products); 0 outside y (nothing is stored there).
__device__ __forceinline__ float gemm8_row_scale(const Gemm8Out& o, int row) {
  return row < o.m ? o.scale_a[static_cast<int64_t>(row) * o.scale_a_stride] : 0.f;
}
__device__ __forceinline__ float gemm8_col_scale(const Gemm8Out& o, int col) {
  return col < o.n ? o.scale_b[static_cast<int64_t>(col) * o.scale_b_stride] : 0.f;
}

// Outputs (row, col) and (row, col + 1) of y from f32 accumulators (FP8 products) times the row's
// scale sa and the columns' sb0, sb1 (as the reference: the scales' product first, then the
// product with the sum), rounded once to y's dtype (nearest even). The callers load each row's
// and column's scale once for all the outputs of a thread.
__device__ __forceinline__ void gemm8_store(const Gemm8Out& o, int row, int col, float v0, float v1, float sa,
                                            float sb0, float sb1) {
  if (row >= o.m) return;
  v0 *= sa * sb0;
  v1 *= sa * sb1;
  const int64_t at = static_cast<int64_t>(row) * o.y_m;
  if (o.out == DType::f32)
    gemm::store_pair<float>(static_cast<float*>(o.y) + at, col, o.n, v0, v1, o.y_pairs);
  else if (o.out == DType::bf16)
    gemm::store_pair<__nv_bfloat16>(static_cast<__nv_bfloat16*>(o.y) + at, col, o.n, v0, v1, o.y_pairs);
  else
    gemm::store_pair<__half>(static_cast<__half*>(o.y) + at, col, o.n, v0, v1, o.y_pairs);
}

namespace gemm8 {

// Element types of the kernels: int8_t, and these tags for the FP8 encodings (bytes on the
// device; the tensor cores decode them).
struct E4M3 {};
struct E5M2 {};
// The accumulator of a product of TA and TB elements: s32 for int8_t x int8_t, else f32.
template <typename TA, typename TB>
using Acc = std::conditional_t<std::is_same_v<TA, int8_t> && std::is_same_v<TB, int8_t>, int32_t, float>;


inline constexpr int kBM = 128, kBN = 128, kBK = 128, kThreads = 256;
inline constexpr int kTileBytes = kBM * kBK;  // 16 KB, one operand
inline constexpr int kStageBytes = 2 * kTileBytes;
inline constexpr int kFastStages = 4;
inline constexpr int kGeneralStages = 2;
static_assert(kBK == gemm::kMmaBK * 2 && kBM == gemm::kMmaBM && kThreads == gemm::kMmaThreads,
              "gemm_mma.cuh's k_inner tile geometry and ChunkWalk, in bytes");

struct MmaArgs {
  const unsigned char* a;
  int64_t a_m, a_k;
  const unsigned char* b;
  int64_t b_k, b_n;
  int m, n, k;
  int tiles_m, tiles_n;
  bool a_k_fast, b_k_fast;  // general path: the operand's k stride is the smaller one
  Gemm8Out out;
};

// d += a b for one 16 x 8 x 32 tile (PTX ISA mma.m16n8k32, .row.col): s8 x s8 into s32, or any
// pair of FP8 types into f32.
#define DNNB_MMA_16832(TYPES, C)                                                                      \
  asm volatile("mma.sync.aligned.m16n8k32.row.col." TYPES                                             \
               " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                   \
               : C(d[0]), C(d[1]), C(d[2]), C(d[3])                                                   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
#define DNNB_MMA_R(x) "+r"(x)
#define DNNB_MMA_F(x) "+f"(x)
template <typename TA, typename TB>
__device__ __forceinline__ void mma_16832(Acc<TA, TB> (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  constexpr bool kAE4M3 = std::is_same_v<TA, E4M3>, kBE4M3 = std::is_same_v<TB, E4M3>;
  if constexpr (std::is_same_v<TA, int8_t>) {
    static_assert(std::is_same_v<TB, int8_t>, "s8 x s8");
    DNNB_MMA_16832("s32.s8.s8.s32", DNNB_MMA_R);
  } else if constexpr (kAE4M3 && kBE4M3) {
    DNNB_MMA_16832("f32.e4m3.e4m3.f32", DNNB_MMA_F);
  } else if constexpr (kAE4M3) {
    DNNB_MMA_16832("f32.e4m3.e5m2.f32", DNNB_MMA_F);
  } else if constexpr (kBE4M3) {
    DNNB_MMA_16832("f32.e5m2.e4m3.f32", DNNB_MMA_F);
  } else {
    DNNB_MMA_16832("f32.e5m2.e5m2.f32", DNNB_MMA_F);
  }
}
#undef DNNB_MMA_16832
#undef DNNB_MMA_R
#undef DNNB_MMA_F

__device__ __forceinline__ uint32_t chunk_offset(int row, int chunk) {
  return gemm::tile_chunk_offset<gemm::TileOrder::k_inner>(row, chunk);
}

// Fast path: a tile of a K-contiguous operand, rows r0 .. r0 + 127 (of rows_total) and bytes
// k0 .. k0 + 127 (of k_total) of each; `stride` the row stride (a multiple of 16), base 16-byte
// aligned. Bytes outside the operand are zero-filled.
__device__ __forceinline__ void load_tile_async(uint32_t tile, const unsigned char* base, int64_t stride,
                                                int rows_total, int k_total, int r0, int k0, int tid) {
#pragma unroll
  for (int i = 0; i < kBM * 8 / kThreads; ++i) {
    const int idx = tid + i * kThreads;
    const int row = idx >> 3, chunk = idx & 7;
    const int gr = r0 + row, gk = k0 + chunk * 16;
    const int valid = gr < rows_total ? max(0, min(16, k_total - gk)) : 0;
    const unsigned char* src = valid > 0 ? base + static_cast<int64_t>(gr) * stride + gk : base;
    gemm::cp_async_16(tile + chunk_offset(row, chunk), src, valid);
  }
}

// General path: the thread's 4 chunks of 16 consecutive k (gemm::ChunkWalk: along k when k has
// the smaller stride, else along the rows), loaded byte by byte (zero outside the operand).
__device__ __forceinline__ void fetch_tile_general(uint4 (&v)[gemm::kGeneralChunks], const gemm::ChunkWalk& w,
                                                   const unsigned char* base, int64_t s_r, int64_t s_k, int rows_total,
                                                   int k_total, int r0, int k0) {
  const int gr = r0 + w.r, gk = k0 + w.c * 16;
#pragma unroll
  for (int i = 0; i < gemm::kGeneralChunks; ++i) {
    const int row = gr + i * w.dr, k = gk + i * w.dc * 16;
    const unsigned char* at = base + static_cast<int64_t>(row) * s_r + static_cast<int64_t>(k) * s_k;
    uint32_t word[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t x = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int kk = 4 * q + j;
        const uint32_t byte = (row < rows_total && k + kk < k_total) ? at[static_cast<int64_t>(kk) * s_k] : 0u;
        x |= byte << (8 * j);
      }
      word[q] = x;
    }
    v[i] = make_uint4(word[0], word[1], word[2], word[3]);
  }
}

// The MMAs of one stage: 4 k-steps of 32, in two halves of 2. Warp (wm, wn) covers rows
// wm * 64 .. + 63 and columns wn * 32 .. + 31 of the block tile; the ldmatrix addressing is
// gemm::mma_stage's k_inner one (see the top of this file). Per half, B's fragments are loaded
// once (16 registers), then A's per 16-row slice, whose 4 output tiles take the half's 2
// k-steps: FP8 sums them from zero in 16 registers and adds them to the f32 accumulators (the
// promotion above, every 64 products) without a second set of accumulators; s8 accumulates
// directly. Each fragment is loaded once per stage, as with one pass over the 4 k-steps.
template <typename TA, typename TB>
__device__ __forceinline__ void mma_stage(Acc<TA, TB> (&acc)[4][4][4], uint32_t tile_a, uint32_t tile_b, int wm, int wn,
                                          int lane) {
  constexpr int kHalf = kBK / 64;  // k-steps of 32 per half
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    uint32_t bf[kHalf][4][2];
#pragma unroll
    for (int s = 0; s < kHalf; ++s)
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        uint32_t r[4];
        const int kk = half * kHalf + s;
        gemm::ldmatrix_x4(r, tile_b + chunk_offset(wn * 32 + jj * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                   kk * 2 + ((lane >> 3) & 1)));
        bf[s][2 * jj][0] = r[0];
        bf[s][2 * jj][1] = r[1];
        bf[s][2 * jj + 1][0] = r[2];
        bf[s][2 * jj + 1][1] = r[3];
      }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t af[kHalf][4];
#pragma unroll
      for (int s = 0; s < kHalf; ++s)
        gemm::ldmatrix_x4(af[s],
                          tile_a + chunk_offset(wm * 64 + i * 16 + (lane & 15), (half * kHalf + s) * 2 + (lane >> 4)));
      if constexpr (std::is_same_v<Acc<TA, TB>, float>) {
        float part[4][4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) part[j][e] = 0.f;
#pragma unroll
        for (int s = 0; s < kHalf; ++s)
#pragma unroll
          for (int j = 0; j < 4; ++j) mma_16832<TA, TB>(part[j], af[s], bf[s][j][0], bf[s][j][1]);
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][j][e] += part[j][e];
      } else {
#pragma unroll
        for (int s = 0; s < kHalf; ++s)
#pragma unroll
          for (int j = 0; j < 4; ++j) mma_16832<TA, TB>(acc[i][j], af[s], bf[s][j][0], bf[s][j][1]);
      }
    }
  }
}

// The kernel: one 128 x 128 output tile per block.
template <typename TA, typename TB, bool kGeneral>
__global__ void __launch_bounds__(kThreads, 1) gemm8_mma_kernel(const MmaArgs p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 2, wn = warp & 3;
  int tm, tn;
  grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * kBM, n0 = tn * kBN;
  const int k_tiles = (p.k + kBK - 1) / kBK;
  const uint32_t s0 = gemm::smem_addr(smem);

  Acc<TA, TB> acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

  if constexpr (!kGeneral) {
    constexpr int S = kFastStages;
    auto load_stage = [&](int stage, int kt) {
      const uint32_t ta = s0 + stage * kStageBytes;
      load_tile_async(ta, p.a, p.a_m, p.m, p.k, m0, kt * kBK, tid);
      load_tile_async(ta + kTileBytes, p.b, p.b_n, p.n, p.k, n0, kt * kBK, tid);
    };
    // Stages 0 .. S-2 in flight; one commit group per k tile (empty past the end) so that
    // wait_group<S-2> at step kt always means "tile kt has landed".
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < k_tiles) load_stage(s, s);
      gemm::cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      gemm::cp_async_wait<S - 2>();
      __syncthreads();  // tile kt visible to all; every warp is done with tile kt - 1's stage
      const int next = kt + S - 1;
      if (next < k_tiles) load_stage(next % S, next);
      gemm::cp_async_commit();
      const uint32_t ta = s0 + (kt % S) * kStageBytes;
      mma_stage<TA, TB>(acc, ta, ta + kTileBytes, wm, wn, lane);
    }
    gemm::cp_async_wait<0>();
  } else {
    uint4 va[gemm::kGeneralChunks], vb[gemm::kGeneralChunks];
    const gemm::ChunkWalk wa(tid, p.a_k_fast), wb(tid, p.b_k_fast);
    // B's rows in the tile are N: element (n, k) at n * b_n + k * b_k.
    auto fetch = [&](int kt) {
      fetch_tile_general(va, wa, p.a, p.a_m, p.a_k, p.m, p.k, m0, kt * kBK);
      fetch_tile_general(vb, wb, p.b, p.b_n, p.b_k, p.n, p.k, n0, kt * kBK);
    };
    auto store = [&](int stage) {
      unsigned char* ta = smem + stage * kStageBytes;
      gemm::store_tile_general(ta, va, wa);  // the chunks' k_inner places, as in gemm_mma.cuh
      gemm::store_tile_general(ta + kTileBytes, vb, wb);
    };
    fetch(0);
    store(0);
    __syncthreads();
    for (int kt = 0; kt < k_tiles; ++kt) {
      const bool more = kt + 1 < k_tiles;
      if (more) fetch(kt + 1);  // in flight during this tile's MMAs
      const uint32_t ta = s0 + (kt & 1) * kStageBytes;
      mma_stage<TA, TB>(acc, ta, ta + kTileBytes, wm, wn, lane);
      if (more) store((kt + 1) & 1);  // that stage was last read at step kt - 1, before the barrier
      __syncthreads();
    }
  }

  // Epilogue: accumulator tile (i, j) of the warp holds rows g, g + 8 and columns 2t, 2t + 1.
  const int g = lane >> 2, t = lane & 3;
  const int row0 = m0 + wm * 64 + g, col0 = n0 + wn * 32 + 2 * t;
  if constexpr (std::is_same_v<Acc<TA, TB>, float>) {
    float sa[4][2], sb[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) sa[i][h] = gemm8_row_scale(p.out, row0 + i * 16 + 8 * h);
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) sb[j][e] = gemm8_col_scale(p.out, col0 + j * 8 + e);
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          gemm8_store(p.out, row0 + i * 16 + 8 * h, col0 + j * 8, acc[i][j][2 * h], acc[i][j][2 * h + 1], sa[i][h],
                      sb[j][0], sb[j][1]);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          gemm8_store(p.out, row0 + i * 16 + 8 * h, col0 + j * 8, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
  }
}


// The fast path's condition: both operands K-contiguous with 16-byte aligned rows.
inline bool fast_path(const Gemm8Call& c) {
  return aligned16(c.a) && aligned16(c.b) && c.a_k == 1 && c.b_k == 1 && (c.m == 1 || c.a_m % 16 == 0) &&
         (c.n == 1 || c.b_n % 16 == 0);
}

template <typename TA, typename TB, bool kGeneral>
Status launch_mma(const CudaDevice& device, const MmaArgs& args) {
  constexpr int kSmem = (kGeneral ? kGeneralStages : kFastStages) * kStageBytes;
  auto kernel = gemm8_mma_kernel<TA, TB, kGeneral>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  kernel<<<static_cast<unsigned>(args.tiles_m * args.tiles_n), kThreads, kSmem, device.stream()>>>(args);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Packing an operand for the wgmma kernel: rows x k bytes at any strides (element (r, k) at
// src[r * s_r + k * s_k]) copied K-contiguous to dst (row stride ld, a multiple of 16). Blocks of
// 32 x 8 threads move 64 x 64 tiles through shared memory: loads run along the source's unit
// stride (kRFast: consecutive threads take consecutive rows, the transposed b of torch._int_mm's
// row-major [K, N]), stores are 4-byte words along k.
inline constexpr int kPackTile = 64;

template <bool kRFast>
__global__ void __launch_bounds__(256) pack_k_major_kernel(const unsigned char* src, int64_t s_r, int64_t s_k,
                                                           int rows, int k, unsigned char* dst, int64_t ld) {
  __shared__ unsigned char tile[kPackTile][kPackTile + 4];  // [k][row]
  const int r0 = blockIdx.x * kPackTile, k0 = blockIdx.y * kPackTile;
  const int x = threadIdx.x, y = threadIdx.y;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < kPackTile / 8; ++j) {
      const int r = kRFast ? x + 32 * i : y + 8 * j, kk = kRFast ? y + 8 * j : x + 32 * i;
      const int gr = r0 + r, gk = k0 + kk;
      tile[kk][r] = gr < rows && gk < k ? src[static_cast<int64_t>(gr) * s_r + static_cast<int64_t>(gk) * s_k] : 0;
    }
  __syncthreads();
  const int tid = y * 32 + x, w = tid % 16;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = tid / 16 + 16 * i, gr = r0 + r, gk = k0 + 4 * w;
    if (gr >= rows || gk >= k) continue;
    unsigned char* out = dst + static_cast<int64_t>(gr) * ld + gk;
    if (gk + 3 < k) {
      *reinterpret_cast<uint32_t*>(out) = tile[4 * w][r] | tile[4 * w + 1][r] << 8 | tile[4 * w + 2][r] << 16 |
                                          static_cast<uint32_t>(tile[4 * w + 3][r]) << 24;
    } else {
      for (int e = 0; gk + e < k; ++e) out[e] = tile[4 * w + e][r];
    }
  }
}

inline Status pack_k_major(const CudaDevice& device, const unsigned char* src, int64_t s_r, int64_t s_k, int64_t rows,
                           int64_t k, unsigned char* dst, int64_t ld) {
  const dim3 grid(static_cast<unsigned>(ceil_div(rows, kPackTile)), static_cast<unsigned>(ceil_div(k, kPackTile)));
  if (std::llabs(s_r) <= std::llabs(s_k))
    pack_k_major_kernel<true><<<grid, dim3(32, 8), 0, device.stream()>>>(src, s_r, s_k, static_cast<int>(rows),
                                                                         static_cast<int>(k), dst, ld);
  else
    pack_k_major_kernel<false><<<grid, dim3(32, 8), 0, device.stream()>>>(src, s_r, s_k, static_cast<int>(rows),
                                                                          static_cast<int>(k), dst, ld);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// The packed row stride of K bytes, and the workspace a product may need: both operands packed
// when the wgmma kernel could take the product (M and N at least 64), none otherwise.
inline int64_t packed_ld(int64_t k) { return (k + 15) / 16 * 16; }
inline size_t workspace_bytes(int64_t m, int64_t n, int64_t k) {
  return m >= 64 && n >= 64 ? static_cast<size_t>(packed_ld(k) * (m + n)) : 0;
}

}  // namespace gemm8

// Runs the product on the mma.sync kernel, TA and TB the element types (int8_t and int8_t, or
// gemm8::E4M3 / E5M2). unsupported for a dim beyond 2^31 - 1 or more output tiles than a grid
// holds.
template <typename TA, typename TB>
Status launch_gemm8_mma(const CudaDevice& device, const Gemm8Call& c) {
  const int64_t tiles_m = ceil_div(c.m, gemm8::kBM), tiles_n = ceil_div(c.n, gemm8::kBN);
  if (std::max({c.m, c.n, c.k}) > INT32_MAX || tiles_m * tiles_n > INT32_MAX)
    return Status::unsupported("cuda 8-bit gemm: " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                               std::to_string(c.k) + " is beyond the kernel's 32-bit indices");
  gemm8::MmaArgs args{};
  args.a = static_cast<const unsigned char*>(c.a);
  args.a_m = c.a_m;
  args.a_k = c.a_k;
  args.b = static_cast<const unsigned char*>(c.b);
  args.b_k = c.b_k;
  args.b_n = c.b_n;
  args.m = static_cast<int>(c.m);
  args.n = static_cast<int>(c.n);
  args.k = static_cast<int>(c.k);
  args.tiles_m = static_cast<int>(tiles_m);
  args.tiles_n = static_cast<int>(tiles_n);
  // Along k when k's stride is the smaller one (so a warp's loads cover contiguous bytes).
  args.a_k_fast = std::llabs(c.a_k) <= std::llabs(c.a_m);
  args.b_k_fast = std::llabs(c.b_k) <= std::llabs(c.b_n);
  args.out = gemm8_out(c);
  if (gemm8::fast_path(c)) return gemm8::launch_mma<TA, TB, false>(device, args);
  return gemm8::launch_mma<TA, TB, true>(device, args);
}

// Runs the product: on the wgmma kernel when it takes it (compute capability 9.0, M and N at
// least 64), first packing into the workspace an operand that is not K-contiguous with 16-byte
// rows (torch._int_mm's row-major b, a transposed or padded a); on the mma.sync kernel otherwise.
// DNNB_CUDA_GEMM8_WGMMA=0 keeps every product on the mma.sync kernel (to check it on Hopper).
template <typename TA, typename TB>
Status run_gemm8(const CudaDevice& device, const Gemm8Call& c, const Tensor& workspace) {
  static const bool wgmma_on = [] {
    const char* v = std::getenv("DNNB_CUDA_GEMM8_WGMMA");
    return v == nullptr || std::string(v) != "0";
  }();
  if (wgmma_on && gemm8_wgmma_applies(c, device)) return launch_gemm8_wgmma(device, c);
  const size_t need = gemm8::workspace_bytes(c.m, c.n, c.k);
  const bool have = workspace.buffer && workspace.buffer->handle != nullptr &&
                    static_cast<size_t>(workspace.numel()) >= need;
  if (wgmma_on && need > 0 && have) {
    const int64_t ld = gemm8::packed_ld(c.k);
    auto* ws = data_ptr<unsigned char>(workspace);
    Gemm8Call packed = c;
    const bool pack_a = c.a_k != 1 || c.a_m % 16 != 0 || !aligned16(c.a);
    const bool pack_b = c.b_k != 1 || c.b_n % 16 != 0 || !aligned16(c.b);
    if (pack_a) {
      packed.a = ws;
      packed.a_m = ld;
      packed.a_k = 1;
    }
    if (pack_b) {
      packed.b = ws + c.m * ld;
      packed.b_n = ld;
      packed.b_k = 1;
    }
    if (gemm8_wgmma_applies(packed, device)) {
      if (pack_a)
        DNNB_TRY(gemm8::pack_k_major(device, static_cast<const unsigned char*>(c.a), c.a_m, c.a_k, c.m, c.k,
                                     static_cast<unsigned char*>(const_cast<void*>(packed.a)), ld));
      if (pack_b)
        DNNB_TRY(gemm8::pack_k_major(device, static_cast<const unsigned char*>(c.b), c.b_n, c.b_k, c.n, c.k,
                                     static_cast<unsigned char*>(const_cast<void*>(packed.b)), ld));
      return launch_gemm8_wgmma(device, packed);
    }
  }
  return launch_gemm8_mma<TA, TB>(device, c);
}

// Registers a CUDA implementation of an 8-bit product op (problem dtype `dtype`) with the
// workspace run_gemm8 may pack into; `dims` gives the problem's M, N, K.
inline bool register_gemm8(const std::string& op, DType dtype, const std::string& compute_unit,
                           std::function<Status(OpCall&)> run,
                           std::function<Result<ops::GemmDesc>(const Problem&)> dims) {
  Implementation impl;
  impl.op = op;
  impl.backend = "cuda";
  impl.dtypes = {dtype};
  impl.compute_unit = compute_unit;
  impl.supports = [dtype](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cuda kernels run on CUDA devices, not " + device.info().id);
    if (problem.dtype != dtype)
      return Status::unsupported("cuda " + problem.op + " has no " + dtype_name(problem.dtype) + " kernel");
    return Status::ok();
  };
  impl.run = std::move(run);
  impl.workspace_bytes = [dims](const Problem& problem, const DeviceRuntime&) -> Result<size_t> {
    auto d = dims(problem);
    if (!d) return d.status();
    return gemm8::workspace_bytes(d->m, d->n, d->k);
  };
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cuda_kernels
