// The f16/bf16 tensor-core GEMM: mma.sync.aligned.m16n8k16 with f32 accumulation, operands
// fed from shared memory by ldmatrix. Used for every f16/bf16 matmul and linear that the wgmma
// kernel (sm90a/) does not take.
//
// Block tile 128 (M) x 128 (N), K in steps of 64; 8 warps as 2 (M) x 4 (N), each warp owning a
// 64 x 32 piece of the output: 4 x 4 mma tiles of 16 x 8, 64 f32 accumulators per thread.
//
// Shared memory: a tile of 128 rows x 64 k (A or B) is 16 KB in one of two orders, so that
// either operand may have its unit stride along K or along M/N without a transpose on the way:
//   k_inner  rows are M (or N), each 64 k = 128 bytes = 8 chunks of 16 bytes;
//   k_outer  rows are k, each 128 m (or n) = 256 bytes = 16 chunks.
// A 16-byte chunk c of row r is stored at chunk c ^ (r & 7) (the XOR touches the low 3 bits):
// ldmatrix reads 8 rows at the same logical chunk, which land in 8 different 16-byte bank groups,
// and cp.async writes whole rows, so both sides are free of bank conflicts. k_inner tiles are
// read with ldmatrix, k_outer tiles with ldmatrix.trans: either gives the fragment mma wants.
//
// Two ways to fill the tiles:
//   fast     16-byte cp.async copies straight from global memory (every operand's rows 16-byte
//            aligned, unit stride along the tile's row), 4 stages in flight (128 KB), the
//            copies of an edge zero-filled (cp.async's src-size): any M, N, K.
//   general  element-wise loads into registers for any strides (padded rows, odd offsets),
//            converted to the k_inner order, 2 stages: the next tile's loads are issued before
//            the current tile's MMAs and stored after them.
// Outside M, N or K everything reads as zero, so edge tiles need no other care; the epilogue
// stores only the elements inside y.
#pragma once
#include <cstdint>

#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels::gemm {

inline constexpr int kMmaBM = 128, kMmaBN = 128, kMmaBK = 64, kMmaThreads = 256;
inline constexpr int kMmaTileBytes = kMmaBM * kMmaBK * 2;  // one operand's tile: 16 KB
inline constexpr int kMmaStageBytes = 2 * kMmaTileBytes;   // A and B
inline constexpr int kMmaFastStages = 4;
inline constexpr int kMmaGeneralStages = 2;

enum class TileOrder { k_inner, k_outer };

// What a kernel launch needs; strides in elements, pointers with the batch 0 element.
struct MmaArgs {
  const uint16_t* a;
  int64_t a_batch, a_m, a_k;
  const uint16_t* b;
  int64_t b_batch, b_k, b_n;
  const uint16_t* bias;
  int64_t bias_stride;
  void* y;
  int64_t y_batch, y_m;
  int m, n, k;
  int tiles_m, tiles_n;
  bool out_f32;   // y is f32; else the input dtype, rounded to nearest even
  bool y_pairs;   // two adjacent outputs of a row may be stored as one access (alignment)
  bool a_k_fast;  // general path: A's k stride is the smaller one (load along k)
  bool b_k_fast;  // general path: B's k stride is the smaller one
};

// ---------------------------------------------------------------------------------------------
// PTX wrappers. "memory" clobbers keep the compiler from moving shared memory accesses across
// them or across the barriers.

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; the first src_bytes are read, the rest of the 16 zero-filled.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// d += a b for one 16 x 8 x 16 tile; T = __half or __nv_bfloat16.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of the given order.
template <TileOrder kOrder>
__device__ __forceinline__ uint32_t tile_chunk_offset(int row, int chunk) {
  constexpr int kRowBytes = kOrder == TileOrder::k_inner ? kMmaBK * 2 : kMmaBM * 2;
  return static_cast<uint32_t>(row * kRowBytes + ((chunk ^ (row & 7)) << 4));
}


// ---------------------------------------------------------------------------------------------
// Tile loads.

// Fast path: a tile of an operand whose unit stride runs along the tile's rows. `rows_total`
// is the extent along M (or N), `r0` the tile's first M (or N) index, `stride` the stride of
// the other dim (a multiple of 8 elements), `base` 16-byte aligned.
template <TileOrder kOrder>
__device__ __forceinline__ void load_tile_async(uint32_t tile, const uint16_t* base, int64_t stride,
                                                int rows_total, int k_total, int r0, int k0, int tid) {
  constexpr int kChunks = kMmaBM * kMmaBK / 8;  // 1024 chunks of 8 elements
#pragma unroll
  for (int i = 0; i < kChunks / kMmaThreads; ++i) {
    const int idx = tid + i * kMmaThreads;
    int row, chunk, valid;
    int64_t offset;
    if constexpr (kOrder == TileOrder::k_inner) {  // rows are M/N, 8 chunks along k
      row = idx >> 3;
      chunk = idx & 7;
      const int gr = r0 + row, gk = k0 + chunk * 8;
      valid = gr < rows_total ? max(0, min(8, k_total - gk)) : 0;
      offset = static_cast<int64_t>(gr) * stride + gk;
    } else {  // rows are k, 16 chunks along M/N
      row = idx >> 4;
      chunk = idx & 15;
      const int gk = k0 + row, gr = r0 + chunk * 8;
      valid = gk < k_total ? max(0, min(8, rows_total - gr)) : 0;
      offset = static_cast<int64_t>(gk) * stride + gr;
    }
    const uint16_t* src = valid > 0 ? base + offset : base;
    cp_async_16(tile + tile_chunk_offset<kOrder>(row, chunk), src, valid * 2);
  }
}

// General path: the tile as 1024 chunks of 8 consecutive k, 4 per thread, each loaded element
// by element (any strides, zero outside the operand) into 4 registers and stored to its k_inner
// place with one 16-byte shared store. Chunk i of a thread is (row r + i dr, chunk c + i dc):
// with k_fast consecutive threads take consecutive chunks of a row (the loads of a warp cover
// contiguous memory when k has the smaller stride); otherwise consecutive rows of one chunk.
inline constexpr int kGeneralChunks = kMmaBM * kMmaBK / 8 / kMmaThreads;  // 4

struct ChunkWalk {
  int r, c, dr, dc;
  __device__ __forceinline__ ChunkWalk(int tid, bool k_fast) {
    if (k_fast) {
      r = tid >> 3;
      c = tid & 7;
      dr = kMmaThreads / 8;
      dc = 0;
    } else {
      r = tid & (kMmaBM - 1);
      c = tid / kMmaBM;
      dr = 0;
      dc = kMmaThreads / kMmaBM;
    }
  }
};

__device__ __forceinline__ void fetch_tile_general(uint4 (&v)[kGeneralChunks], const ChunkWalk& w, const uint16_t* base,
                                                   int64_t s_r, int64_t s_k, int rows_total, int k_total, int r0,
                                                   int k0) {
  const int gr = r0 + w.r, gk = k0 + w.c * 8;
  const int64_t first = static_cast<int64_t>(gr) * s_r + static_cast<int64_t>(gk) * s_k;
  const int64_t step = static_cast<int64_t>(w.dr) * s_r + static_cast<int64_t>(w.dc) * 8 * s_k;
#pragma unroll
  for (int i = 0; i < kGeneralChunks; ++i) {
    const int row = gr + i * w.dr, k = gk + i * w.dc * 8;
    const int64_t at = first + i * step;
    uint32_t e[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = (row < rows_total && k + j < k_total) ? base[at + j * s_k] : 0u;
    v[i] = make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
  }
}

__device__ __forceinline__ void store_tile_general(unsigned char* tile, const uint4 (&v)[kGeneralChunks],
                                                   const ChunkWalk& w) {
#pragma unroll
  for (int i = 0; i < kGeneralChunks; ++i)
    *reinterpret_cast<uint4*>(tile + tile_chunk_offset<TileOrder::k_inner>(w.r + i * w.dr, w.c + i * w.dc)) = v[i];
}

// ---------------------------------------------------------------------------------------------
// MMAs over one stage: 4 k-steps of 16. Warp (wm, wn) covers rows wm * 64 .. + 63 and columns
// wn * 32 .. + 31 of the block tile.
//
// Fragments (PTX ISA, mma.m16n8k16): lane = 4 g + t. A's 4 registers hold (row g, k 2t..2t+1),
// (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8); B's 2 hold (k 2t..2t+1, col g), (2t + 8, g); the
// accumulators (g, 2t..2t+1) and (g + 8, 2t..2t+1). ldmatrix.x4 gives register i from 8 x 8
// matrix i, whose row addresses come from lanes 8i .. 8i + 7; each lane gets row lane / 4,
// elements 2 (lane % 4) and + 1 of it (.trans: column lane / 4, rows 2 (lane % 4) and + 1).
template <typename T, TileOrder kA, TileOrder kB>
__device__ __forceinline__ void mma_stage(float (&acc)[4][4][4], uint32_t tile_a, uint32_t tile_b, int wm,
                                          int wn, int lane) {
#pragma unroll
  for (int kk = 0; kk < kMmaBK / 16; ++kk) {
    uint32_t af[4][4];
    uint32_t bf[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kA == TileOrder::k_inner) {
        // Matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
        const int row = wm * 64 + i * 16 + (lane & 15);
        const int chunk = kk * 2 + (lane >> 4);
        ldmatrix_x4(af[i], tile_a + tile_chunk_offset<TileOrder::k_inner>(row, chunk));
      } else {
        // Stored as k rows: the same four matrices, transposed on the way.
        const int krow = kk * 16 + (lane & 7) + ((lane >> 4) << 3);
        const int col = wm * 64 + i * 16 + (((lane >> 3) & 1) << 3);
        ldmatrix_x4_trans(af[i], tile_a + tile_chunk_offset<TileOrder::k_outer>(krow, col >> 3));
      }
    }
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      uint32_t r[4];
      if constexpr (kB == TileOrder::k_inner) {
        // Stored as n rows: matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15).
        const int nrow = wn * 32 + jj * 16 + (lane & 7) + ((lane >> 4) << 3);
        const int chunk = kk * 2 + ((lane >> 3) & 1);
        ldmatrix_x4(r, tile_b + tile_chunk_offset<TileOrder::k_inner>(nrow, chunk));
      } else {
        // Stored as k rows: matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
        const int krow = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        const int col = wn * 32 + jj * 16 + ((lane >> 4) << 3);
        ldmatrix_x4_trans(r, tile_b + tile_chunk_offset<TileOrder::k_outer>(krow, col >> 3));
      }
      bf[2 * jj][0] = r[0];
      bf[2 * jj][1] = r[1];
      bf[2 * jj + 1][0] = r[2];
      bf[2 * jj + 1][1] = r[3];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) mma_16816<T>(acc[i][j], af[i], bf[j][0], bf[j][1]);
  }
}

// ---------------------------------------------------------------------------------------------
// Epilogue: y = acc (+ bias), rounded once to y's dtype; only elements inside y are stored.

template <typename TY>
__device__ __forceinline__ void store_pair(TY* row, int col, int n, float v0, float v1, bool pairs) {
  if (pairs && col + 1 < n) {
    if constexpr (std::is_same_v<TY, float>) {
      *reinterpret_cast<float2*>(row + col) = make_float2(v0, v1);
    } else {
      TY two[2] = {from_float<TY>(v0), from_float<TY>(v1)};
      uint32_t bits;
      memcpy(&bits, two, sizeof(bits));
      *reinterpret_cast<uint32_t*>(row + col) = bits;
    }
  } else {
    if (col < n) row[col] = from_float<TY>(v0);
    if (col + 1 < n) row[col + 1] = from_float<TY>(v1);
  }
}

template <typename T, typename TY>
__device__ __forceinline__ void mma_epilogue(const MmaArgs& p, const float (&acc)[4][4][4], int batch, int m0,
                                             int n0, int wm, int wn, int lane) {
  TY* y = static_cast<TY*>(p.y) + static_cast<int64_t>(batch) * p.y_batch;
  const T* bias = reinterpret_cast<const T*>(p.bias);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int col = n0 + wn * 32 + j * 8 + 2 * t;
    float b0 = 0.f, b1 = 0.f;
    if (bias != nullptr) {
      if (col < p.n) b0 = to_float(bias[static_cast<int64_t>(col) * p.bias_stride]);
      if (col + 1 < p.n) b1 = to_float(bias[static_cast<int64_t>(col + 1) * p.bias_stride]);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm * 64 + i * 16 + g + h * 8;
        if (row < p.m)
          store_pair<TY>(y + static_cast<int64_t>(row) * p.y_m, col, p.n, acc[i][j][2 * h] + b0,
                         acc[i][j][2 * h + 1] + b1, p.y_pairs);
      }
  }
}

// ---------------------------------------------------------------------------------------------
// The kernel: one 128 x 128 output tile of one batch per block.

template <typename T, TileOrder kA, TileOrder kB, bool kGeneral>
__global__ void __launch_bounds__(kMmaThreads, 1) gemm_mma_kernel(const MmaArgs p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 2, wn = warp & 3;
  int tm, tn;
  grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * kMmaBM, n0 = tn * kMmaBN;
  const int batch = blockIdx.z;
  const uint16_t* a = p.a + static_cast<int64_t>(batch) * p.a_batch;
  const uint16_t* b = p.b + static_cast<int64_t>(batch) * p.b_batch;
  const int k_tiles = (p.k + kMmaBK - 1) / kMmaBK;
  const uint32_t s0 = smem_addr(smem);

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  if constexpr (!kGeneral) {
    constexpr int S = kMmaFastStages;
    // A's unit stride is along k for k_inner (rows M, row stride a_m), along M for k_outer
    // (rows k, row stride a_k); B likewise with N.
    const int64_t a_stride = kA == TileOrder::k_inner ? p.a_m : p.a_k;
    const int64_t b_stride = kB == TileOrder::k_inner ? p.b_n : p.b_k;
    auto load_stage = [&](int stage, int kt) {
      const uint32_t ta = s0 + stage * kMmaStageBytes;
      load_tile_async<kA>(ta, a, a_stride, p.m, p.k, m0, kt * kMmaBK, tid);
      load_tile_async<kB>(ta + kMmaTileBytes, b, b_stride, p.n, p.k, n0, kt * kMmaBK, tid);
    };
    // Stages 0 .. S-2 in flight; one commit group per k tile (empty past the end) so that
    // wait_group<S-2> at step kt always means "tile kt has landed".
#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < k_tiles) load_stage(s, s);
      cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<S - 2>();
      __syncthreads();  // tile kt visible to all; every warp is done with tile kt - 1's stage
      const int next = kt + S - 1;
      if (next < k_tiles) load_stage(next % S, next);
      cp_async_commit();
      const uint32_t ta = s0 + (kt % S) * kMmaStageBytes;
      mma_stage<T, kA, kB>(acc, ta, ta + kMmaTileBytes, wm, wn, lane);
    }
    cp_async_wait<0>();
  } else {
    static_assert(kA == TileOrder::k_inner && kB == TileOrder::k_inner, "the general path stores k_inner tiles");
    uint4 va[kGeneralChunks], vb[kGeneralChunks];
    const ChunkWalk wa(tid, p.a_k_fast), wb(tid, p.b_k_fast);
    // B's rows in the tile are N: element (n, k) at n * b_n + k * b_k.
    auto fetch = [&](int kt) {
      fetch_tile_general(va, wa, a, p.a_m, p.a_k, p.m, p.k, m0, kt * kMmaBK);
      fetch_tile_general(vb, wb, b, p.b_n, p.b_k, p.n, p.k, n0, kt * kMmaBK);
    };
    auto store = [&](int stage) {
      unsigned char* ta = smem + stage * kMmaStageBytes;
      store_tile_general(ta, va, wa);
      store_tile_general(ta + kMmaTileBytes, vb, wb);
    };
    fetch(0);
    store(0);
    __syncthreads();
    for (int kt = 0; kt < k_tiles; ++kt) {
      const bool more = kt + 1 < k_tiles;
      if (more) fetch(kt + 1);  // in flight during this tile's MMAs
      const uint32_t ta = s0 + (kt & 1) * kMmaStageBytes;
      mma_stage<T, kA, kB>(acc, ta, ta + kMmaTileBytes, wm, wn, lane);
      if (more) store((kt + 1) & 1);  // that stage was last read at step kt - 1, before the barrier
      __syncthreads();
    }
  }

  if (p.out_f32)
    mma_epilogue<T, float>(p, acc, batch, m0, n0, wm, wn, lane);
  else
    mma_epilogue<T, T>(p, acc, batch, m0, n0, wm, wn, lane);
}

}  // namespace dnnb::cuda_kernels::gemm
