// The Hopper GEMM for large f16/bf16 products: wgmma (warpgroup MMA, m64n256k16, f32
// accumulation) fed by TMA, with a warp-specialised pipeline. Built for sm_90a only (wgmma and
// setmaxnreg exist only there); launch_gemm takes it on compute capability 9.0 devices for
// operands TMA can describe (gemm_wgmma_applies), the mma.sync kernel otherwise.
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

#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/sm90a/tma.cuh"
#include "kernels/cuda/sm90a/wgmma.cuh"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr int kWgBM = 128, kWgBN = 256, kWgBK = 64, kWgStages = 4;
inline constexpr int kWgConsumers = 2;
inline constexpr int kWgThreads = 128 * (1 + kWgConsumers);
inline constexpr int kWgATileBytes = kWgBM * kWgBK * 2;          // 16 KB
inline constexpr int kWgBTileBytes = kWgBN * kWgBK * 2;          // 32 KB
inline constexpr int kWgStageBytes = kWgATileBytes + kWgBTileBytes;
inline constexpr int kWgSlabBytes = 64 * kWgBK * 2;              // an N-major B slab: 8 KB
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
};

// ---------------------------------------------------------------------------------------------
// The kernel: one 128 x 256 output tile of one batch per block.

template <typename T, bool kBKMajor>
__global__ void __launch_bounds__(kWgThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                      const WgmmaArgs p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = (gemm::smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t full = base + kWgStages * kWgStageBytes;  // full[s] at full + 8 s
  const uint32_t empty = full + 8 * kWgStages;             // empty[s] at empty + 8 s
  const int wg = threadIdx.x / 128;
  int tm, tn;
  grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tm, tn);
  const int m0 = tm * kWgBM, n0 = tn * kWgBN, batch = blockIdx.z;
  const int k_tiles = (p.k + kWgBK - 1) / kWgBK;

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
        const int k0 = kt * kWgBK;
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
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kWgStages;
    mbar_wait(full + 8 * s, (kt / kWgStages) & 1);
    const uint32_t sa = base + s * kWgStageBytes + c * 64 * 128, sb = base + s * kWgStageBytes + kWgATileBytes;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kWgBK / 16; ++kk) {
      const uint64_t da = desc_k_major(sa + kk * 32);
      const uint64_t db = kBKMajor ? desc_k_major(sb + kk * 32) : desc_n_major(sb + kk * 2048, kWgSlabBytes);
      wgmma_m64n256k16<T, kBKMajor ? 0 : 1>(acc, da, db);
    }
    wgmma_commit();
    if (kt > 0) {
      wgmma_wait<1>();  // tile kt - 1's MMAs are done: its stage goes back to the producer
      mbar_arrive(empty + 8 * ((kt - 1) % kWgStages));
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) fence_operand(acc[i]);

  // Epilogue: rows 16 w + g (+ 8) of this warpgroup's 64, columns 8 j + 2 q (+ 1).
  const int t = threadIdx.x % 128, g = (t % 32) / 4, q = t % 4;
  const int row0 = m0 + c * 64 + 16 * (t / 32) + g;
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
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side.

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A row stride TMA can step by (a multiple of 16 bytes), and a batch stride likewise or unused.
bool tma_stride(int64_t stride) { return stride > 0 && stride % 8 == 0; }
bool tma_batch_stride(int64_t stride, int64_t batch) { return batch == 1 || tma_stride(stride); }

bool b_is_k_major(const GemmCall& g) { return g.b_k == 1 && tma_stride(g.b_n); }
bool b_is_n_major(const GemmCall& g) { return g.b_n == 1 && tma_stride(g.b_k); }

// A 3-D tiled map of a 16-bit operand: dims (inner, outer, batch), strides in elements, boxes of
// box_inner x box_outer x 1 in the 128-byte swizzle, zeros outside.
Result<CUtensorMap> tensor_map(DType dtype, const void* base, int64_t inner, int64_t outer, int64_t batch,
                               int64_t outer_stride, int64_t batch_stride, uint32_t box_inner, uint32_t box_outer) {
  if (batch == 1) batch_stride = outer * outer_stride;  // unused, but must be a valid stride
  const int64_t dims[3] = {inner, outer, batch}, strides[2] = {outer_stride, batch_stride};
  const uint32_t box[3] = {box_inner, box_outer, 1};
  return tensor_map_16bit(dtype, base, 3, dims, strides, box, "cuda gemm");
}

template <typename T, bool kBKMajor>
Status launch(const CudaDevice& device, const CUtensorMap& a, const CUtensorMap& b, const WgmmaArgs& p, int64_t batch) {
  auto kernel = gemm_wgmma_kernel<T, kBKMajor>;
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
  auto ta = tensor_map(g.in_dtype, g.a, g.k, g.m, g.batch, g.a_m, g.a_batch, kWgBK, kWgBM);
  if (!ta) return ta.status();
  auto tb = b_k_major ? tensor_map(g.in_dtype, g.b, g.k, g.n, g.batch, g.b_n, g.b_batch, kWgBK, kWgBN)
                      : tensor_map(g.in_dtype, g.b, g.n, g.k, g.batch, g.b_k, g.b_batch, 64, kWgBK);
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
  if (g.in_dtype == DType::bf16)
    return b_k_major ? launch<__nv_bfloat16, true>(device, *ta, *tb, p, g.batch)
                     : launch<__nv_bfloat16, false>(device, *ta, *tb, p, g.batch);
  return b_k_major ? launch<__half, true>(device, *ta, *tb, p, g.batch) : launch<__half, false>(device, *ta, *tb, p, g.batch);
}

}  // namespace dnnb::cuda_kernels
