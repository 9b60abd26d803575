// The f16/bf16 attention forward on the tensor cores, FlashAttention 2's schedule with mma.sync
// m16n8k16 (f32 accumulation) and ldmatrix, the wrappers of gemm_mma.cuh.
//
// One block of 4 warps per (batch, head, 64 query rows); warp w owns rows 16 w .. 16 w + 15.
// q's 64 x D tile stays in shared memory; k and v come in tiles of kBN keys (64; 32 when
// Dv = 256, so that the 16 x 256 f32 accumulator and the scores fit the registers), two stages:
// the next tile is in flight (cp.async) while this one is used. Per tile a warp computes
// S = Q K^T (16 x kBN f32 in registers), the score rule (scale, softcap; the causal, window and
// length rules and the mask only on tiles that need them), the online softmax of its rows
// (max and sum across the 4 lanes of a row), rescales its output and adds P V, P rounded to
// the dtype as the A operand straight from the S accumulators (no trip through shared memory).
// The causal and window rules skip whole tiles nobody in the block sees (sdpa_common.cuh).
//
// Shared tiles hold rows of 16-bit elements; 16-byte chunk c of row r is stored at chunk
// c ^ (r & 7) (rows of 8 or more chunks) or c ^ ((r >> 1) & 3) (rows of 4 chunks, Dv = 32), so
// the 8 rows one ldmatrix phase reads land in 8 different bank groups.
// Tiles are filled by 16-byte cp.async copies (zero-filled past the rows) when the operand's
// rows are 16-byte aligned with unit element stride, else element by element through registers
// (padded or transposed layouts; same tile, synchronous).
#pragma once
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/sdpa_common.cuh"

namespace dnnb::cuda_kernels::sdpa {

using gemm::cp_async_16;
using gemm::cp_async_commit;
using gemm::cp_async_wait;
using gemm::ldmatrix_x4;
using gemm::ldmatrix_x4_trans;
using gemm::mma_16816;
using gemm::smem_addr;

inline constexpr int kMmaRows = 64, kMmaWarps = 4, kMmaThreads = 32 * kMmaWarps;

template <int D, int DV>
struct MmaTile {
  static constexpr int kBN = DV == 256 ? 32 : 64;
  static constexpr int kQBytes = kMmaRows * D * 2;
  static constexpr int kKBytes = kBN * D * 2;
  static constexpr int kVBytes = kBN * DV * 2;
  static constexpr int kStageBytes = kKBytes + kVBytes;
  static constexpr int kSmem = kQBytes + 2 * kStageBytes;
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of kCols 16-bit elements per row.
template <int kCols>
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  constexpr int kChunks = kCols / 8;
  static_assert(kChunks == 4 || kChunks % 8 == 0, "rows of 4 chunks or a multiple of 8");
  const int phys = kChunks >= 8 ? chunk ^ (row & 7) : chunk ^ ((row >> 1) & 3);
  return static_cast<uint32_t>(row * kCols * 2 + (phys << 4));
}

// Rows [r0, r0 + kRows) of a [rows_total, kCols] operand (element (r, e) at base[r s_row + e
// s_col]) into a swizzled tile; rows past rows_total are zero. async: 16-byte cp.async copies
// (base 16-byte aligned, s_col 1, s_row a multiple of 8), else element loads and 16-byte stores.
template <int kRows, int kCols>
__device__ __forceinline__ void load_tile(unsigned char* tile, const uint16_t* base, int64_t s_row, int64_t s_col,
                                          int r0, int rows_total, bool async) {
  constexpr int kChunks = kCols / 8;
  static_assert(kRows * kChunks % kMmaThreads == 0, "whole passes of the block");
  const uint32_t tile_s = smem_addr(tile);
#pragma unroll 4
  for (int idx = threadIdx.x; idx < kRows * kChunks; idx += kMmaThreads) {
    const int row = idx / kChunks, chunk = idx % kChunks;
    const int gr = r0 + row;
    const uint32_t off = swizzled<kCols>(row, chunk);
    if (async) {
      const bool inside = gr < rows_total;
      const uint16_t* src = inside ? base + static_cast<int64_t>(gr) * s_row + chunk * 8 : base;
      cp_async_16(tile_s + off, src, inside ? 16 : 0);
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

// Which operands the kernel may copy with cp.async, and whether o's column pairs may be stored
// as one 4-byte access.
struct MmaPaths {
  bool q_async = false, k_async = false, v_async = false, o_pairs = false;
};

inline bool aligned_to(const void* ptr, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

// cp.async takes an operand whose rows start 16-byte aligned with unit element stride.
inline bool async_rows(const Operand& x) {
  return aligned_to(x.data, 16) && x.se == 1 && x.ss % 8 == 0 && x.sh % 8 == 0 && x.sb % 8 == 0;
}

// Two adjacent elements of a 16-bit output row may be stored as one 4-byte access.
inline bool pair_rows(const Operand& x) {
  return aligned_to(x.data, 4) && x.se == 1 && x.ss % 2 == 0 && x.sh % 2 == 0 && x.sb % 2 == 0;
}

inline MmaPaths mma_paths(const Attn& a) {
  MmaPaths paths;
  paths.q_async = async_rows(a.q);
  paths.k_async = async_rows(a.k);
  paths.v_async = async_rows(a.v);
  paths.o_pairs = pair_rows(a.o);
  return paths;
}

template <typename T, int D, int DV>
__global__ void __launch_bounds__(kMmaThreads) sdpa_fwd_mma_kernel(const Attn p, const MmaPaths paths, int m_blocks) {
  using Tile = MmaTile<D, DV>;
  constexpr int kBN = Tile::kBN;
  extern __shared__ __align__(128) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  int mb = m_blocks - 1 - static_cast<int>(blockIdx.x) / (p.batch * p.heads);
  const int bh = static_cast<int>(blockIdx.x) % (p.batch * p.heads);
  const int b = bh / p.heads, h = bh % p.heads, kvh = h / p.group;
  const int m0 = mb * kMmaRows;
  const int row0 = m0 + warp * 16;  // this warp's first row

  const uint16_t* qg = p.q.head<const uint16_t>(b, h);
  const uint16_t* kg = p.k.head<const uint16_t>(b, kvh);
  const uint16_t* vg = p.v.head<const uint16_t>(b, kvh);
  unsigned char* q_tile = smem;
  auto k_tile = [&](int stage) { return smem + Tile::kQBytes + stage * Tile::kStageBytes; };
  auto v_tile = [&](int stage) { return k_tile(stage) + Tile::kKBytes; };
  auto load_kv = [&](int stage, int j0) {
    load_tile<kBN, D>(k_tile(stage), kg, p.k.ss, p.k.se, j0, p.sk, paths.k_async);
    load_tile<kBN, DV>(v_tile(stage), vg, p.v.ss, p.v.se, j0, p.sk, paths.v_async);
  };

  int lo, hi;
  key_range(p, m0, min(m0 + kMmaRows, p.sq) - 1, lo, hi);
  const int t_lo = lo / kBN, t_hi = hi > lo ? (hi + kBN - 1) / kBN : t_lo;

  load_tile<kMmaRows, D>(q_tile, qg, p.q.ss, p.q.se, m0, p.sq, paths.q_async);
  if (t_lo < t_hi) load_kv(0, t_lo * kBN);
  cp_async_commit();

  float o[DV / 8][4];
#pragma unroll
  for (int n = 0; n < DV / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
  float m_row[2] = {-INFINITY, -INFINITY}, l_row[2] = {0.f, 0.f};  // rows g and g + 8 (partial l per lane)
  const uint32_t q_s = smem_addr(q_tile);

  for (int tile = t_lo; tile < t_hi; ++tile) {
    const int stage = (tile - t_lo) & 1;
    if (tile + 1 < t_hi)
      load_kv(stage ^ 1, (tile + 1) * kBN);  // its stage was last read before the barrier ending tile - 1
    cp_async_commit();
    cp_async_wait<1>();  // this tile's group (and q's) has landed
    __syncthreads();
    const uint32_t k_s = smem_addr(k_tile(stage)), v_s = smem_addr(v_tile(stage));

    // S = Q K^T: fragments as in gemm_mma.cuh's mma_stage (q k_inner as A, k k_inner as B).
    float s[kBN / 8][4];
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t af[4];
      ldmatrix_x4(af, q_s + swizzled<D>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
      for (int jj = 0; jj < kBN / 16; ++jj) {
        uint32_t r[4];
        ldmatrix_x4(r, k_s + swizzled<D>(jj * 16 + (lane & 7) + ((lane >> 4) << 3), kk * 2 + ((lane >> 3) & 1)));
        mma_16816<T>(s[2 * jj], af, r[0], r[1]);
        mma_16816<T>(s[2 * jj + 1], af, r[2], r[3]);
      }
    }

    // The score rule. Accumulator (n, e) is row g + 8 (e / 2), key j0 + 8 n + 2 t + e % 2. The
    // visibility rules and the mask only where some pair of this warp's rows needs them.
    const int j0 = tile * kBN;
    const bool whole = p.mask.data == nullptr && j0 + kBN <= p.sk && (!p.causal || j0 + kBN - 1 <= row0) &&
                       (p.window == 0 || j0 > row0 + 15 - p.window);
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (whole) {
          float v = s[n][e] * p.scale;
          if (p.softcap > 0.f) v = p.softcap * tanhf(v * p.softcap_inv);
          s[n][e] = v;
        } else {
          float dcap;
          s[n][e] = final_score<T>(p, s[n][e], row0 + g + 8 * (e >> 1), j0 + 8 * n + 2 * t + (e & 1), dcap);
        }
      }

      // Online softmax per row; the 4 lanes of a row hold its kBN scores between them.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = m_row[r];
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float shift = row_shift(mx);
      const float alpha = m_row[r] == -INFINITY ? 0.f : exp2f(row_shift(m_row[r]) - shift);
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float pv = exp2f(fmaf(s[n][2 * r + c], kLog2e, -shift));
          s[n][2 * r + c] = pv;
          sum += pv;
        }
      l_row[r] = l_row[r] * alpha + sum;
      m_row[r] = mx;
#pragma unroll
      for (int n = 0; n < DV / 8; ++n) {
        o[n][2 * r] *= alpha;
        o[n][2 * r + 1] *= alpha;
      }
    }

    // O += P V: P's A fragment for keys 16 kk .. 16 kk + 15 is S tiles 2 kk and 2 kk + 1;
    // v is stored as key rows (k_outer), read with ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t af[4];
      af[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
      af[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
      af[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      af[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int jj = 0; jj < DV / 16; ++jj) {
        uint32_t r[4];
        ldmatrix_x4_trans(r, v_s + swizzled<DV>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), jj * 2 + (lane >> 4)));
        mma_16816<T>(o[2 * jj], af, r[0], r[1]);
        mma_16816<T>(o[2 * jj + 1], af, r[2], r[3]);
      }
    }
    __syncthreads();  // every warp is done with this stage before the next iteration refills it
  }
  cp_async_wait<0>();

  // Epilogue: o (1 / l) rounded once, lse from the row's max and sum.
  T* og = p.o.head<T>(b, h);
  float* lg = p.lse.head<float>(b, h);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_row[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int i = row0 + g + 8 * r;
    if (i >= p.sq) continue;
    const float inv_l = l > 0.f ? 1.f / l : 0.f;
    T* orow = og + static_cast<int64_t>(i) * p.o.ss;
#pragma unroll
    for (int n = 0; n < DV / 8; ++n) {
      const int col = n * 8 + 2 * t;
      const float v0 = o[n][2 * r] * inv_l, v1 = o[n][2 * r + 1] * inv_l;
      if (paths.o_pairs) {
        *reinterpret_cast<uint32_t*>(orow + col) = pack2<T>(v0, v1);
      } else {
        orow[static_cast<int64_t>(col) * p.o.se] = from_float<T>(v0);
        orow[static_cast<int64_t>(col + 1) * p.o.se] = from_float<T>(v1);
      }
    }
    if (t == 0) lg[static_cast<int64_t>(i) * p.lse.ss] = row_lse(m_row[r], l);
  }
}

}  // namespace dnnb::cuda_kernels::sdpa
