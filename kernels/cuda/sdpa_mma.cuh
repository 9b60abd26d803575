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
// The causal and window rules skip whole tiles nobody in the block sees (sdpa_common.cuh);
// the tiles and their loads are attention_mma.cuh's.
#pragma once
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/sdpa_common.cuh"

namespace dnnb::cuda_kernels::sdpa {

using attention::a_from_acc;
using attention::aligned_to;
using attention::async_rows;
using attention::kMmaThreads;
using attention::load_tile;
using attention::mma_b_cols;
using attention::mma_paths;
using attention::mma_rows_rows;
using attention::MmaPaths;
using attention::pack2;
using attention::pair_rows;
using attention::store2;
using gemm::cp_async_commit;
using gemm::cp_async_wait;
using gemm::smem_addr;

inline constexpr int kMmaRows = 64;

template <int D, int DV>
struct MmaTile {
  static constexpr int kBN = DV == 256 ? 32 : 64;
  static constexpr int kQBytes = kMmaRows * D * 2;
  static constexpr int kKBytes = kBN * D * 2;
  static constexpr int kVBytes = kBN * DV * 2;
  static constexpr int kStageBytes = kKBytes + kVBytes;
  static constexpr int kSmem = kQBytes + 2 * kStageBytes;
};

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
    mma_rows_rows<T, D>(s, q_s, k_s, warp, lane);

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
      a_from_acc<T>(af, s, kk);
      mma_b_cols<T, DV>(o, af, v_s, kk, lane);
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
      // store2 (attention_mma.cuh) written out: as a call, nvcc allocates this kernel's registers
      // differently.
      if (paths.out_pairs) {
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
