// ggml_matvec_v2 (kernels/cuda/matmul_ggml_v2.h): y = x w^T for q8_0 w at M <= 4 tokens with
// whole 8-block groups (K % 256 == 0), x quantised by ggml_quantize_x (kernels/cuda/
// matmul_ggml.cu) in v2_slot order.
//
// A block owns 32 rows of w (lane l of every warp: row 32 blockIdx.x + l; rows past N repeat the
// last row, never stored); its W warps take the groups of 8 blocks of K in turn (warp i: groups
// i, i + W, ...). A group of a row is 272 bytes, 17 whole 16-byte chunks at a 16-byte aligned
// place (rows are 16-byte aligned and 272 x groups long). Each warp streams its 32 rows' groups
// through its own ring of kStages stages in shared memory with coalesced 16-byte cp.async (chunk
// i = lane + 32 k of a stage is chunk i % 17 of row i / 17, stored at 16 i: row r's group at
// 272 r), kStages - 1 groups in flight while it computes one; the first kStages - 1 are issued
// before the wait for the quantiser (griddepcontrol.wait): w does not depend on it.
// After that wait the block copies x's quants and scales for the whole K into shared memory
// once (cp.async, then a barrier), so the loop's only global traffic is w.
// Compute: a lane reads its row's group by 16-byte shared loads (rows 68 words apart: a quarter
// warp's 8 lanes hit 32 different banks), block j's 34 bytes from chunks 2j .. 2j + 2 (block j
// starts 2j bytes into chunk 2j), so its scale and quants lie at constant places: an even block
// has its scale in the low half of window word j / 2, quants 0, 1 in that word's high half,
// 2 .. 29 in the next 7 words and 30, 31 in the low half of the ninth; an odd block has its
// scale in the high half of window word (j - 1) / 2 and its quants in the next 8 words. x is
// stored in the same order (v2_slot: an even block's quants 2 .. 29, then 0, 1, 30, 31, joined
// on the w side by one byte permute), so the integer dot of a block is 8 dp4a of matching words
// (exact in s32 in any order), in two independent chains of 4. x's words and scales are read by
// broadcast shared loads. As in the ring kernel each block then adds float(sumi) x (d_w x d_x)
// to the token's f32 sum by an FMA (d_w x d_x exact in f32; float(sumi) exact, |sumi| < 2^22,
// by the 1.5 x 2^23 bias), blocks in K order within a warp; the warps' sums are added through
// shared memory in warp order (deterministic).
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/matmul_ggml_v2.h"

namespace dnnb::cuda_kernels::ggml_v2 {
namespace {

constexpr int kGroupBlocks = 8;
constexpr int kGroupBytes = kGroupBlocks * 34;      // 272: 17 whole 16-byte chunks
constexpr int kChunks = kGroupBytes / 16;           // 17
constexpr int kRows = 32;                           // rows of w per block: one a lane
constexpr int kStageBytes = kRows * kGroupBytes;    // 8704: a warp's 32 rows x one group
constexpr int kPerLane = kRows * kChunks / 32;      // cp.async per lane per stage: 17
constexpr int kMaxWarps = 8;
constexpr int kSmemLimit = 227 * 1024;  // sm_90's opt-in shared memory per block
static_assert(kGroupBytes % 16 == 0 && (kGroupBytes / 4) % 32 == 4);
static_assert(kStageBytes >= 4 * 32 * 4, "the warps' sums of up to 4 tokens fit in their rings");

// Floats of x's scales staged per block of K: tokens 0 .. M - 1, padded to a vector load.
__host__ __device__ constexpr int scale_stride(int m) { return m == 1 ? 1 : m == 2 ? 2 : 4; }

int64_t smem_bytes(int64_t m, int64_t nb, int stages, int warps) {
  return static_cast<int64_t>(warps) * stages * kStageBytes + m * nb * 32 + nb * scale_stride(static_cast<int>(m)) * 4;
}

// Global -> shared copies of 4 or 8 bytes (through L1: x is read by every block) and 16 (L2).
template <int kBytes>
__device__ __forceinline__ void cp_async_small(uint32_t dst, const void* src) {
  if constexpr (kBytes == 16)
    gemm::cp_async_16(dst, src, 16);
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(kBytes) : "memory");
}

// float(s) for |s| < 2^22, exactly: s in the significand of 1.5 x 2^23, then the bias taken off.
__device__ __forceinline__ float exact_float(int s) { return __int_as_float(0x4b400000 + s) - 12582912.0f; }

__device__ __forceinline__ void load4(uint32_t* w, const uint4* p) {
  const uint4 v = *p;
  w[0] = v.x;
  w[1] = v.y;
  w[2] = v.z;
  w[3] = v.w;
}

// d_x of tokens 0 .. kM - 1 of one block (one shared load).
template <int kM>
__device__ __forceinline__ void load_dx(float (&d)[kM], const float* p) {
  if constexpr (kM == 1) {
    d[0] = *p;
  } else if constexpr (kM == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    d[0] = v.x;
    d[1] = v.y;
  } else {
    const float4 v = *reinterpret_cast<const float4*>(p);
    const float all[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int t = 0; t < kM; ++t) d[t] = all[t];
  }
}

// One group of this lane's row (`row`: its 272 staged bytes) against x's blocks at `xq` (token t
// at xq + t x token_bytes, 32 bytes a block) and scales at `xd` (scale_stride floats a block).
template <int kM>
__device__ __forceinline__ void group_dot(float (&acc)[kM], const unsigned char* row, const unsigned char* xq,
                                          int token_bytes, const float* xd) {
  const uint4* chunk = reinterpret_cast<const uint4*>(row);
  uint32_t win[12];  // chunks 2j .. 2j + 2 of the group: block j's 34 bytes start 2j bytes in
  load4(win, chunk);
  load4(win + 4, chunk + 1);
  load4(win + 8, chunk + 2);
#pragma unroll
  for (int j = 0; j < kGroupBlocks; ++j) {
    if (j > 0) {
#pragma unroll
      for (int k = 0; k < 4; ++k) win[k] = win[8 + k];
      load4(win + 4, chunk + 2 * j + 1);
      load4(win + 8, chunk + 2 * j + 2);
    }
    const int e = j >> 1;
    uint32_t wq[8];
    float dw;
    if (j % 2 == 0) {
      dw = __half2float(__ushort_as_half(static_cast<unsigned short>(win[e] & 0xffffu)));
#pragma unroll
      for (int k = 0; k < 7; ++k) wq[k] = win[e + 1 + k];
      wq[7] = __byte_perm(win[e], win[e + 8], 0x5432);  // quants 0, 1, 30, 31
    } else {
      dw = __half2float(__ushort_as_half(static_cast<unsigned short>(win[e] >> 16)));
#pragma unroll
      for (int k = 0; k < 8; ++k) wq[k] = win[e + 1 + k];
    }
    float dx[kM];
    load_dx<kM>(dx, xd + j * scale_stride(kM));
#pragma unroll
    for (int t = 0; t < kM; ++t) {
      const uint4* xb = reinterpret_cast<const uint4*>(xq + t * token_bytes + j * 32);
      const uint4 x0 = xb[0], x1 = xb[1];
      int s0 = __dp4a(static_cast<int>(wq[0]), static_cast<int>(x0.x), 0);
      int s1 = __dp4a(static_cast<int>(wq[4]), static_cast<int>(x1.x), 0);
      s0 = __dp4a(static_cast<int>(wq[1]), static_cast<int>(x0.y), s0);
      s1 = __dp4a(static_cast<int>(wq[5]), static_cast<int>(x1.y), s1);
      s0 = __dp4a(static_cast<int>(wq[2]), static_cast<int>(x0.z), s0);
      s1 = __dp4a(static_cast<int>(wq[6]), static_cast<int>(x1.z), s1);
      s0 = __dp4a(static_cast<int>(wq[3]), static_cast<int>(x0.w), s0);
      s1 = __dp4a(static_cast<int>(wq[7]), static_cast<int>(x1.w), s1);
      acc[t] = fmaf(exact_float(s0 + s1), dw * dx[t], acc[t]);
    }
  }
}

template <int kM, int kStages>
__global__ void __launch_bounds__(kMaxWarps * 32) ggml_matvec_v2(const Args p) {
  constexpr int kDs = scale_stride(kM);
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int row0 = static_cast<int>(blockIdx.x) * kRows;
  const int groups = p.nb / kGroupBlocks;
  unsigned char* ring = smem + warp * kStages * kStageBytes;
  const uint32_t ring_s = gemm::smem_addr(ring);
  unsigned char* sxq = smem + warps * kStages * kStageBytes;  // kM x nb x 32
  float* sxd = reinterpret_cast<float*>(sxq + kM * p.nb * 32);  // nb x kDs

  // This lane's chunks of a stage: chunk i = lane + 32 k is chunk c = i % 17 of row r = i / 17,
  // read from the group's place in row r (w_tile + src[k] + 272 q) into stage byte 16 i.
  const unsigned char* w_tile = p.w + static_cast<int64_t>(row0) * p.w_row_bytes;
  int src[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int i = lane + 32 * k, r = i / kChunks, c = i - r * kChunks;
    src[k] = (min(row0 + r, p.n - 1) - row0) * static_cast<int>(p.w_row_bytes) + 16 * c;
  }
  auto issue = [&](int q, int slot) {
    const unsigned char* base = w_tile + static_cast<int64_t>(q) * kGroupBytes;
    const uint32_t stage = ring_s + slot * kStageBytes + 16 * lane;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) gemm::cp_async_16(stage + 512 * k, base + src[k], 16);
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (warp + s * warps < groups) issue(warp + s * warps, s);
    gemm::cp_async_commit();
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // x's quants and scales are written

  // x for the whole K, by every thread of the block; then every copy so far has landed (w's
  // first stages too, issued before x's) and is visible to every warp.
  {
    const uint32_t sxq_s = gemm::smem_addr(sxq), sxd_s = gemm::smem_addr(sxd);
    const int chunks = kM * p.nb * 2;
    for (int i = threadIdx.x; i < chunks; i += blockDim.x) gemm::cp_async_16(sxq_s + 16 * i, p.xq + 16 * i, 16);
    for (int b = threadIdx.x; b < p.nb; b += blockDim.x) cp_async_small<kDs * 4>(sxd_s + b * kDs * 4, p.xd + 8 * b);
    gemm::cp_async_commit();
    gemm::cp_async_wait<0>();
    __syncthreads();
  }

  float acc[kM];
#pragma unroll
  for (int t = 0; t < kM; ++t) acc[t] = 0.0f;
  const int token_bytes = p.nb * 32;
  int slot = 0, ahead_slot = kStages - 1;
  for (int q = warp; q < groups; q += warps) {
    const int ahead = q + (kStages - 1) * warps;
    if (ahead < groups) issue(ahead, ahead_slot);
    gemm::cp_async_commit();
    gemm::cp_async_wait<kStages - 1>();
    __syncwarp();  // every lane's chunks of this stage have landed
    group_dot<kM>(acc, ring + slot * kStageBytes + lane * kGroupBytes, sxq + q * kGroupBlocks * 32, token_bytes,
                  sxd + q * kGroupBlocks * kDs);
    __syncwarp();  // every lane has read the stage before it is refilled
    slot = slot + 1 == kStages ? 0 : slot + 1;
    ahead_slot = ahead_slot + 1 == kStages ? 0 : ahead_slot + 1;
  }

  // The warps' sums, added in warp order through the (now idle) rings.
  gemm::cp_async_wait<0>();
  __syncthreads();
  float* part = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int t = 0; t < kM; ++t) part[(warp * kM + t) * 32 + lane] = acc[t];
  __syncthreads();
  for (int i = threadIdx.x; i < kM * 32; i += blockDim.x) {
    const int t = i >> 5, l = i & 31;
    float v = 0.0f;
    for (int wi = 0; wi < warps; ++wi) v += part[(wi * kM + t) * 32 + l];
    if (row0 + l < p.n) p.y[static_cast<int64_t>(t) * p.y_row + row0 + l] = v;
  }
}

template <int kM, int kStages>
Status launch_one(const CudaDevice& device, const Args& p, int warps) {
  const auto kernel = &ggml_matvec_v2<kM, kStages>;
  const int smem = static_cast<int>(smem_bytes(kM, p.nb, kStages, warps));
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  return launch_after_quantiser(device, kernel, static_cast<unsigned>(ceil_div(p.n, kRows)), static_cast<unsigned>(warps * 32),
                                static_cast<size_t>(smem), p);
}

template <int kStages>
Status launch_m(const CudaDevice& device, const Args& p, int warps) {
  switch (p.m) {
    case 1: return launch_one<1, kStages>(device, p, warps);
    case 2: return launch_one<2, kStages>(device, p, warps);
    case 3: return launch_one<3, kStages>(device, p, warps);
    default: return launch_one<4, kStages>(device, p, warps);
  }
}

}  // namespace

int plan_warps(int64_t m, int64_t nb, int stages, int warps) {
  int w = static_cast<int>(std::min<int64_t>({warps, kMaxWarps, std::max<int64_t>(nb / kGroupBlocks, 1)}));
  while (w > 0 && smem_bytes(m, nb, stages, w) > kSmemLimit) --w;
  return w;
}

bool fits(bool q8, int64_t m, int64_t nb, uintptr_t w, int64_t w_row_bytes, int stages, int warps) {
  return q8 && m >= 1 && m <= 4 && nb % kGroupBlocks == 0 && w % 16 == 0 && w_row_bytes % 16 == 0 &&
         w_row_bytes * kRows < INT32_MAX && stages == 2 && plan_warps(m, nb, stages, warps) > 0;
}

Status launch(const CudaDevice& device, const Args& p, int stages, int warps) {
  const int w = plan_warps(p.m, p.nb, stages, warps);
  if (w <= 0 || p.m < 1 || p.m > 4) return Status::unsupported("cuda matmul_ggml v2: problem out of range");
  return launch_m<2>(device, p, w);
}

}  // namespace dnnb::cuda_kernels::ggml_v2
