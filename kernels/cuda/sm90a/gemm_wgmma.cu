// The Hopper GEMM for large f16/bf16 products: wgmma (warpgroup MMA, m64n256k16, f32
// accumulation) fed by TMA, with a warp-specialised pipeline. Built for sm_90a only (wgmma and
// setmaxnreg exist only there); launch_gemm takes it on compute capability 9.0 devices for
// operands TMA can describe (gemm_wgmma_applies), the mma.sync kernel otherwise. The same kernel
// runs the 8-bit products of matmul_i8 and matmul_f8 (gemm8_mma.cuh: gemm8_wgmma_applies,
// launch_gemm8_wgmma), with the differences described above the kernel.
//
// Block tile 128 (M) x 256 (N), K in steps of 64; 384 threads in 3 warpgroups:
//   warpgroup 0, the producer: one thread issues the TMA copies of each k tile into a ring of
//   4 stages (48 KB each: A 128 x 64, B 256 x 64) and waits, per stage, until the consumers
//   have released it; its registers are given to the consumers (setmaxnreg 40).
//   warpgroups 1 and 2, the consumers: each owns 64 rows of the tile, 128 f32 accumulators per
//   thread (setmaxnreg 232); per k tile 4 wgmma of 64 x 256 x 16 straight from shared memory.
//   One k tile's wgmma group stays in flight while the next is issued (wait_group 1), and
//   the stage of the finished one is released.
// Synchronisation: per stage a "full" mbarrier (1 arrival, the producer's expect_tx, plus the
// bytes of the TMA copies) and an "empty" one (256 arrivals, every consumer thread). Fill j of
// stage s completes phase j of its full barrier (consumers wait parity j & 1); release j
// completes phase j of its empty barrier (the producer waits parity j & 1 before fill j + 1).
//
// Shared memory layouts, all in TMA's 128-byte swizzle (16-byte chunk c of a 128-byte row r
// stored at c ^ (r & 7)), tiles 1024-byte aligned (the swizzle pattern's period), which is what
// the wgmma descriptors' 128B swizzle mode reads:
//   A (K-major): 128 rows of 64 k; descriptor stride between 8-row groups (SBO) 1024 bytes; the
//   k-step of 16 moves the start address by 32 bytes within the rows.
//   B K-major (linear's w, a transposed matmul b): 256 rows of 64 k, as A.
//   B N-major (matmul's b, N contiguous): 4 slabs of 64 n x 64 k rows (one TMA box each,
//   8 KB); per the PTX ISA's canonical MN-major layout the leading byte offset (LBO) is the
//   distance between 64-element MN atoms (8192: the next slab) and SBO the distance between
//   8-row k groups (1024); the k-step of 16 moves the start by 2048 bytes. wgmma reads it with
//   imm-trans-b = 1.
// Edges: TMA fills what lies outside the operand with zeros (and counts the whole box in the
// transaction bytes), so any M, N, K works; the epilogue stores only elements inside y.
// Accumulator fragment of m64nNk16 (PTX ISA): thread t of the warpgroup holds, for each 8-column
// block j, (row 16 (t / 32) + (t % 32) / 4, columns 8j + 2 (t % 4) + {0, 1}) in d[4j], d[4j + 1]
// and the same columns 8 rows lower in d[4j + 2], d[4j + 3].
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/gemm8_mma.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/sm90a/tma.cuh"
#include "kernels/cuda/sm90a/wgmma.cuh"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr int kWgBM = 128, kWgBN = 256, kWgStages = 4;
inline constexpr int kWgRowBytes = 128;  // a k tile's row: 64 elements of 16 bits, 128 of 8
inline constexpr int kWgConsumers = 2;
inline constexpr int kWgThreads = 128 * (1 + kWgConsumers);
inline constexpr int kWgATileBytes = kWgBM * kWgRowBytes;        // 16 KB
inline constexpr int kWgBTileBytes = kWgBN * kWgRowBytes;        // 32 KB
inline constexpr int kWgStageBytes = kWgATileBytes + kWgBTileBytes;
inline constexpr int kWgSlabBytes = 64 * kWgRowBytes;            // an N-major B slab: 8 KB

// The element types: __half and __nv_bfloat16 (B K- or N-major, f32 accumulators), int8_t
// (s32 accumulators) and gemm8::E4M3 / E5M2 (f32) with both operands K-major.
template <typename T>
inline constexpr bool kWg16 = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T>
inline constexpr int kWgBK = kWg16<T> ? kWgRowBytes / 2 : kWgRowBytes;  // k per tile
// The stages, 2 mbarriers per stage, and 1024 bytes to align the dynamic base.
inline constexpr int kWgSmemBytes = kWgStages * kWgStageBytes + 2 * kWgStages * 8 + 1024;

struct WgmmaArgs {
  void* y;
  int64_t y_batch, y_m;
  const uint16_t* bias;
  int64_t bias_stride;
  int m, n, k;
  int tiles_m, tiles_n;
  bool out_f32, y_pairs;
  Gemm8Out out8;  // the 8-bit products' epilogue (y, its dtype, the scales)
};

// ---------------------------------------------------------------------------------------------
// The kernel: one 128 x 256 output tile of one batch per block. TA, TB the element types of A
// and B (the same but for the FP8 pairs e4m3 x e5m2 and e5m2 x e4m3).
//
// 8-bit products take the same tiles in bytes: a k tile is 128 elements (one 128-byte row, the
// same swizzle and TMA boxes), a k-step of 32 elements moves the descriptors by 32 bytes as a
// 16-bit step of 16 does, and both operands are K-major. s8: m64n256k32 into s32 accumulators,
// as the 16-bit loop. FP8: each k tile is accumulated by the tensor cores from zero (scale-d 0 at
// its first k-step) in two halves of 128 columns (m64n128k32, 64 registers) and each half is
// added to the f32 accumulators once its wgmma group completes: the tensor cores' FP8
// accumulation keeps fewer bits than f32 (gemm8_mma.cuh), so no more than 128 products are
// summed there. The stage is released after both halves.

template <typename TA, typename TB, bool kBKMajor>
__global__ void __launch_bounds__(kWgThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                      const WgmmaArgs p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = TA;
  static_assert(kBKMajor || kWg16<T>, "8-bit wgmma reads both operands K-major");
  static_assert(std::is_same_v<TA, TB> || !kWg16<T>, "16-bit operands of one type");
  constexpr int kBK = kWgBK<T>;
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = (gemm::smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t full = base + kWgStages * kWgStageBytes;  // full[s] at full + 8 s
  const uint32_t empty = full + 8 * kWgStages;             // empty[s] at empty + 8 s
  const int wg = threadIdx.x / 128;
  int tm, tn;
  grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * kWgBM, n0 = tn * kWgBN, batch = blockIdx.z;
  const int k_tiles = (p.k + kBK - 1) / kBK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kWgStages; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, kWgConsumers * 128);
    }
    fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kWgStages;
        const uint32_t bar = full + 8 * s;
        if (kt >= kWgStages) mbar_wait(empty + 8 * s, ((kt / kWgStages) + 1) & 1);
        mbar_arrive_expect_tx(bar, kWgStageBytes);
        const uint32_t sa = base + s * kWgStageBytes, sb = sa + kWgATileBytes;
        const int k0 = kt * kBK;
        tma_load_3d(sa, &tm_a, k0, m0, batch, bar);
        if constexpr (kBKMajor) {
          tma_load_3d(sb, &tm_b, k0, n0, batch, bar);
        } else {
#pragma unroll
          for (int j = 0; j < kWgBN / 64; ++j) tma_load_3d(sb + j * kWgSlabBytes, &tm_b, n0 + 64 * j, k0, batch, bar);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<232>();
  const int c = wg - 1;  // rows c * 64 .. + 63 of the tile
  constexpr bool kF8 = !kWg16<T> && !std::is_same_v<T, int8_t>;
  using Acc = std::conditional_t<std::is_same_v<T, int8_t>, int32_t, float>;
  Acc acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kWgStages;
    mbar_wait(full + 8 * s, (kt / kWgStages) & 1);
    const uint32_t sa = base + s * kWgStageBytes + c * 64 * 128, sb = base + s * kWgStageBytes + kWgATileBytes;
    if constexpr (kF8) {
      float part[64];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        wgmma_fence();  // part was read by the adds of the previous half
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          wgmma_f8_m64n128k32<std::is_same_v<TA, gemm8::E4M3>, std::is_same_v<TB, gemm8::E4M3>>(
              part, desc_k_major(sa + kk * 32), desc_k_major(sb + h * 128 * kWgRowBytes + kk * 32), kk > 0 ? 1u : 0u);
        wgmma_commit();
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < 64; ++i) {
          fence_operand(part[i]);
          acc[64 * h + i] += part[i];
        }
      }
      mbar_arrive(empty + 8 * s);
    } else {
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const uint64_t da = desc_k_major(sa + kk * 32);
        const uint64_t db = kBKMajor ? desc_k_major(sb + kk * 32) : desc_n_major(sb + kk * 2048, kWgSlabBytes);
        if constexpr (std::is_same_v<T, int8_t>)
          wgmma_s8_m64n256k32(acc, da, db, 1u);
        else
          wgmma_m64n256k16<T, kBKMajor ? 0 : 1>(acc, da, db);
      }
      wgmma_commit();
      if (kt > 0) {
        wgmma_wait<1>();  // tile kt - 1's MMAs are done: its stage goes back to the producer
        mbar_arrive(empty + 8 * ((kt - 1) % kWgStages));
      }
    }
  }
  if constexpr (!kF8) {
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 128; ++i) fence_operand(acc[i]);
  }

  // Epilogue: rows 16 w + g (+ 8) of this warpgroup's 64, columns 8 j + 2 q (+ 1).
  const int t = threadIdx.x % 128, g = (t % 32) / 4, q = t % 4;
  const int row0 = m0 + c * 64 + 16 * (t / 32) + g;
  if constexpr (kF8) {
    const float sa[2] = {gemm8_row_scale(p.out8, row0), gemm8_row_scale(p.out8, row0 + 8)};
#pragma unroll
    for (int j = 0; j < kWgBN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * q;
      const float sb0 = gemm8_col_scale(p.out8, col), sb1 = gemm8_col_scale(p.out8, col + 1);
#pragma unroll
      for (int h = 0; h < 2; ++h)
        gemm8_store(p.out8, row0 + 8 * h, col, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], sa[h], sb0, sb1);
    }
  } else if constexpr (!kWg16<T>) {
#pragma unroll
    for (int j = 0; j < kWgBN / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        gemm8_store(p.out8, row0 + 8 * h, n0 + 8 * j + 2 * q, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
  } else {
    const T* bias = reinterpret_cast<const T*>(p.bias);
#pragma unroll
    for (int j = 0; j < kWgBN / 8; ++j) {
      const int col = n0 + 8 * j + 2 * q;
      float b0 = 0.f, b1 = 0.f;
      if (bias != nullptr) {
        if (col < p.n) b0 = to_float(bias[static_cast<int64_t>(col) * p.bias_stride]);
        if (col + 1 < p.n) b1 = to_float(bias[static_cast<int64_t>(col + 1) * p.bias_stride]);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + 8 * h;
        if (row >= p.m) continue;
        const int64_t at = static_cast<int64_t>(batch) * p.y_batch + static_cast<int64_t>(row) * p.y_m;
        if (p.out_f32)
          gemm::store_pair<float>(static_cast<float*>(p.y) + at, col, p.n, acc[4 * j + 2 * h] + b0,
                                  acc[4 * j + 2 * h + 1] + b1, p.y_pairs);
        else
          gemm::store_pair<T>(static_cast<T*>(p.y) + at, col, p.n, acc[4 * j + 2 * h] + b0, acc[4 * j + 2 * h + 1] + b1,
                              p.y_pairs);
      }
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side.


// A row stride TMA can step by (a multiple of 16 bytes), and a batch stride likewise or unused.
bool tma_stride(int64_t stride) { return stride > 0 && stride % 8 == 0; }
bool tma_batch_stride(int64_t stride, int64_t batch) { return batch == 1 || tma_stride(stride); }

bool b_is_k_major(const GemmCall& g) { return g.b_k == 1 && tma_stride(g.b_n); }
bool b_is_n_major(const GemmCall& g) { return g.b_n == 1 && tma_stride(g.b_k); }

// A 3-D tiled map of a 16- or 8-bit operand: dims (inner, outer, batch), strides in elements, boxes of
// box_inner x box_outer x 1 in the 128-byte swizzle, zeros outside.
Result<CUtensorMap> tensor_map(DType dtype, const void* base, int64_t inner, int64_t outer, int64_t batch,
                               int64_t outer_stride, int64_t batch_stride, uint32_t box_inner, uint32_t box_outer) {
  if (batch == 1) batch_stride = outer * outer_stride;  // unused, but must be a valid stride
  const int64_t dims[3] = {inner, outer, batch}, strides[2] = {outer_stride, batch_stride};
  const uint32_t box[3] = {box_inner, box_outer, 1};
  return tensor_map_tiled(dtype, base, 3, dims, strides, box, "cuda gemm");
}

template <typename TA, typename TB, bool kBKMajor>
Status launch(const CudaDevice& device, const CUtensorMap& a, const CUtensorMap& b, const WgmmaArgs& p, int64_t batch) {
  auto kernel = gemm_wgmma_kernel<TA, TB, kBKMajor>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgSmemBytes));
  const dim3 grid(static_cast<unsigned>(p.tiles_m * p.tiles_n), 1, static_cast<unsigned>(batch));
  kernel<<<grid, kWgThreads, kWgSmemBytes, device.stream()>>>(a, b, p);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

}  // namespace

bool gemm_wgmma_applies(const GemmCall& g, const CudaDevice& device) {
  if (g.in_dtype != DType::bf16 && g.in_dtype != DType::f16) return false;
  // Below a 64 x 64 output the 128 x 256 tile is mostly padding: the mma.sync kernel's job.
  if (g.m < 64 || g.n < 64 || g.batch > 65535) return false;
  if (std::max({g.m, g.n, g.k}) > INT32_MAX) return false;
  if (!aligned16(g.a) || !aligned16(g.b)) return false;
  if (g.a_k != 1 || !tma_stride(g.a_m) || !tma_batch_stride(g.a_batch, g.batch)) return false;
  if (!(b_is_k_major(g) || b_is_n_major(g)) || !tma_batch_stride(g.b_batch, g.batch)) return false;
  return is_sm90(device);
}

Status launch_gemm_wgmma(const CudaDevice& device, const GemmCall& g) {
  if (!gemm_wgmma_applies(g, device))
    return Status::unsupported("cuda gemm: the wgmma kernel does not take this product");
  const bool b_k_major = b_is_k_major(g);
  constexpr int kBK = kWgBK<__half>;
  auto ta = tensor_map(g.in_dtype, g.a, g.k, g.m, g.batch, g.a_m, g.a_batch, kBK, kWgBM);
  if (!ta) return ta.status();
  auto tb = b_k_major ? tensor_map(g.in_dtype, g.b, g.k, g.n, g.batch, g.b_n, g.b_batch, kBK, kWgBN)
                      : tensor_map(g.in_dtype, g.b, g.n, g.k, g.batch, g.b_k, g.b_batch, 64, kBK);
  if (!tb) return tb.status();
  WgmmaArgs p{};
  p.y = g.y;
  p.y_batch = g.y_batch;
  p.y_m = g.y_m;
  p.bias = static_cast<const uint16_t*>(g.bias);
  p.bias_stride = g.bias_stride;
  p.m = static_cast<int>(g.m);
  p.n = static_cast<int>(g.n);
  p.k = static_cast<int>(g.k);
  p.tiles_m = static_cast<int>(ceil_div(g.m, kWgBM));
  p.tiles_n = static_cast<int>(ceil_div(g.n, kWgBN));
  p.out_f32 = g.out_dtype == DType::f32;
  const int64_t out_size = p.out_f32 ? 4 : 2;
  p.y_pairs = reinterpret_cast<uintptr_t>(g.y) % (2 * out_size) == 0 && g.y_m % 2 == 0 &&
              (g.batch == 1 || g.y_batch % 2 == 0);
  using BF = __nv_bfloat16;
  if (g.in_dtype == DType::bf16)
    return b_k_major ? launch<BF, BF, true>(device, *ta, *tb, p, g.batch)
                     : launch<BF, BF, false>(device, *ta, *tb, p, g.batch);
  return b_k_major ? launch<__half, __half, true>(device, *ta, *tb, p, g.batch)
                   : launch<__half, __half, false>(device, *ta, *tb, p, g.batch);
}

// 8-bit products: a and b K-contiguous with rows of whole 16 bytes (TMA's stride unit), 16-byte
// aligned, M and N at least 64, and a pair of element types the kernel is built for.
bool gemm8_wgmma_applies(const Gemm8Call& c, const CudaDevice& device) {
  auto fp8 = [](DType t) { return t == DType::f8_e4m3fn || t == DType::f8_e5m2; };
  const bool s8 = c.a_dtype == DType::i8 && c.b_dtype == DType::i8 && c.out_dtype == DType::i32;
  const bool f8 = fp8(c.a_dtype) && fp8(c.b_dtype) &&
                  (c.a_dtype == DType::f8_e4m3fn || c.b_dtype == DType::f8_e4m3fn) &&
                  (c.out_dtype == DType::f32 || c.out_dtype == DType::bf16 || c.out_dtype == DType::f16);
  if (!s8 && !f8) return false;
  if (c.m < 64 || c.n < 64 || std::max({c.m, c.n, c.k}) > INT32_MAX) return false;
  if (ceil_div(c.m, kWgBM) * ceil_div(c.n, kWgBN) > INT32_MAX) return false;
  if (!aligned16(c.a) || !aligned16(c.b)) return false;
  if (c.a_k != 1 || c.a_m <= 0 || c.a_m % 16 != 0 || c.b_k != 1 || c.b_n <= 0 || c.b_n % 16 != 0) return false;
  return is_sm90(device);
}

Status launch_gemm8_wgmma(const CudaDevice& device, const Gemm8Call& c) {
  if (!gemm8_wgmma_applies(c, device))
    return Status::unsupported("cuda 8-bit gemm: the wgmma kernel does not take this product");
  constexpr int kBK = kWgBK<int8_t>;
  auto ta = tensor_map(c.a_dtype, c.a, c.k, c.m, 1, c.a_m, 0, kBK, kWgBM);
  if (!ta) return ta.status();
  auto tb = tensor_map(c.b_dtype, c.b, c.k, c.n, 1, c.b_n, 0, kBK, kWgBN);
  if (!tb) return tb.status();
  WgmmaArgs p{};
  p.m = static_cast<int>(c.m);
  p.n = static_cast<int>(c.n);
  p.k = static_cast<int>(c.k);
  p.tiles_m = static_cast<int>(ceil_div(c.m, kWgBM));
  p.tiles_n = static_cast<int>(ceil_div(c.n, kWgBN));
  p.out8 = gemm8_out(c);
  using E4 = gemm8::E4M3;
  using E5 = gemm8::E5M2;
  if (c.a_dtype == DType::i8) return launch<int8_t, int8_t, true>(device, *ta, *tb, p, 1);
  const bool a4 = c.a_dtype == DType::f8_e4m3fn, b4 = c.b_dtype == DType::f8_e4m3fn;
  if (a4 && b4) return launch<E4, E4, true>(device, *ta, *tb, p, 1);
  if (a4) return launch<E4, E5, true>(device, *ta, *tb, p, 1);
  return launch<E5, E4, true>(device, *ta, *tb, p, 1);
}

}  // namespace dnnb::cuda_kernels
