// ggml_matvec_rows (kernels/cuda/matmul_ggml_rows.h): y = x w^T for q8_0 w at M <= 4 tokens with
// whole 8-block groups (K % 256 == 0), x quantised by ggml_quantize_x (kernels/cuda/
// matmul_ggml.cu) in rows_slot order.
//
// A warp owns whole rows of w: warp g of the grid's G warps takes rows g, g + G, g + 2G, ..., so at
// any time the grid reads one window of w, and a row's sums stay in one warp (no atomics, a fixed
// order). It reads a row in stages of 8 groups of 8 blocks (2176 bytes, 136 16-byte chunks; the
// last stage of a row may hold fewer groups) by coalesced 16-byte loads into registers, lane l
// taking chunks l, l + 32, ...; registers, not shared memory, hold the stage in flight, so 32 warps
// an SM fit at M = 1 (shared-memory rings allowed 8-12). The source issues the next stage's loads
// before the current stage's compute; under the 64-register cap that __launch_bounds__(512, 2) sets
// at M = 1 the compiler has been seen to place them after it (docs/ops-family4.md says what that
// costs). A stage is written to the warp's 2176 bytes of shared memory and lane l computes the pair
// of blocks 2l, 2l + 1 of it: 68 bytes at 68 l, read as 17 words (17 is odd, so the 32 lanes' loads
// hit 32 different banks). In a pair the even block's scale is the low half of word 0 and its
// quants 0, 1 the high half, quants 2 .. 29 words 1 .. 7 and quants 30, 31 the low half of word 8;
// the odd block's scale is word 8's high half and its quants words 9 .. 16. x is stored in the same
// order (rows_slot: an even block's quants 2 .. 29, then 0, 1, 30, 31, joined on the w side by one
// byte permute), so a block's integer dot is 8 dp4a of matching words (exact in s32 in any order).
// Each block then adds float(sumi) x (d_w x d_x) to the lane's f32 sum by an FMA (d_w x d_x exact
// in f32; float(sumi) exact, |sumi| < 2^22, by the 1.5 x 2^23 bias); at a row's end the lanes' sums
// are added by a butterfly and lane 0 writes y.
// Before griddepcontrol.wait (the quantiser's writes) every warp issues its first stage's loads
// and prefetches its second into L2: w does not depend on x. Then the block copies x's quants
// (each pair of blocks of a token at 80 bytes, padded so that lanes reading different pairs hit
// different banks) and scales for the whole K into shared memory once by cp.async.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/matmul_ggml_rows.h"

namespace dnnb::cuda_kernels::ggml_rows {
namespace {

constexpr int kGroupBlocks = 8;
constexpr int kGroupChunks = kGroupBlocks * 34 / 16;     // 17: a group is 272 bytes
constexpr int kStageGroups = 8;
constexpr int kStageChunks = kStageGroups * kGroupChunks;  // 136: 2176 bytes, 32 pairs of blocks
constexpr int kStageBytes = kStageChunks * 16;
constexpr int kLoads = (kStageChunks + 31) / 32;  // 16-byte loads a lane a stage: 5 (lanes 0 .. 7), else 4
constexpr int kPairBytes = 80;                    // x's pair of blocks (64 bytes), padded
constexpr int kSmemLimit = 227 * 1024;            // sm_90's opt-in shared memory per block
constexpr int kMaxThreads = 512;

// Warps a block: 16 when a row is 4 stages or more (x's staging, K x M bytes a block, shared
// by more warps), else 8.
int warps_for(int64_t nb) { return nb / (kStageGroups * kGroupBlocks) >= 4 ? 16 : 8; }

int64_t smem_bytes(int64_t m, int64_t nb, int warps) {
  return m * (nb / 2) * kPairBytes + m * nb * 4 + static_cast<int64_t>(warps) * kStageBytes;
}

__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

template <int kM>
__global__ void __launch_bounds__(kMaxThreads, kM == 1 ? 2 : 1) ggml_matvec_rows(const Args p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int token_bytes = (p.nb / 2) * kPairBytes;
  unsigned char* sxq = smem;                                    // token t's pair i at t x token_bytes + 80 i
  float* sxd = reinterpret_cast<float*>(smem + kM * token_bytes);  // token t of block b at kM b + t
  unsigned char* stage = smem + kM * token_bytes + kM * p.nb * 4 + warp * kStageBytes;
  const int groups = p.nb / kGroupBlocks, stages = (groups + kStageGroups - 1) / kStageGroups;
  const int grid_warps = static_cast<int>(gridDim.x) * warps, first_row = static_cast<int>(blockIdx.x) * warps + warp;
  const int items = first_row < p.n ? ((p.n - 1 - first_row) / grid_warps + 1) * stages : 0;
  // Item i: stage i % stages of row first_row + (i / stages) x grid_warps, `chunks` 16-byte chunks.
  auto source = [&](int i, int& chunks) {
    const int s = i % stages;
    chunks = kGroupChunks * min(kStageGroups, groups - s * kStageGroups);
    const int64_t row = first_row + static_cast<int64_t>(i / stages) * grid_warps;
    return reinterpret_cast<const uint4*>(p.w + row * p.w_row_bytes + static_cast<int64_t>(s) * kStageBytes);
  };
  uint4 next[kLoads];
  int next_chunks = 0;
  auto load = [&](int i) {
    const uint4* src = source(i, next_chunks);
#pragma unroll
    for (int u = 0; u < kLoads; ++u)
      if (lane + 32 * u < next_chunks) next[u] = __ldcs(src + lane + 32 * u);
  };
  if (items > 0) load(0);
  if (items > 1) {
    int chunks = 0;
    const unsigned char* second = reinterpret_cast<const unsigned char*>(source(1, chunks));
    if (lane * 128 < chunks * 16) prefetch_l2(second + lane * 128);
  }
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // x's quants and scales are written

  {
    const uint32_t sxq_s = gemm::smem_addr(sxq);
    const int token_chunks = p.nb * 2;
    for (int i = threadIdx.x; i < kM * token_chunks; i += blockDim.x) {
      const int t = i / token_chunks, r = i - t * token_chunks;
      gemm::cp_async_16(sxq_s + t * token_bytes + (r >> 2) * kPairBytes + 16 * (r & 3),
                        p.xq + static_cast<int64_t>(t) * p.nb * 32 + 16 * r, 16);
    }
    gemm::cp_async_commit();
    for (int i = threadIdx.x; i < kM * p.nb; i += blockDim.x) sxd[i] = p.xd[8 * (i / kM) + i % kM];
    gemm::cp_async_wait<0>();
    __syncthreads();
  }

  float acc[kM];
#pragma unroll
  for (int t = 0; t < kM; ++t) acc[t] = 0.0f;
  for (int i = 0; i < items; ++i) {
    const int chunks = next_chunks;
#pragma unroll
    for (int u = 0; u < kLoads; ++u)
      if (lane + 32 * u < chunks) *reinterpret_cast<uint4*>(stage + 16 * (lane + 32 * u)) = next[u];
    __syncwarp();
    if (i + 1 < items) load(i + 1);
    const int s = i % stages;
    if (lane * 2 * 34 < chunks * 16) {  // this lane's pair lies in the stage
      uint32_t wr[17];
      const uint32_t* words = reinterpret_cast<const uint32_t*>(stage + 68 * lane);
#pragma unroll
      for (int k = 0; k < 17; ++k) wr[k] = words[k];
      const float d0 = __half2float(__ushort_as_half(static_cast<unsigned short>(wr[0] & 0xffffu)));
      const float d1 = __half2float(__ushort_as_half(static_cast<unsigned short>(wr[8] >> 16)));
      const uint32_t q7 = __byte_perm(wr[0], wr[8], 0x5432);  // the even block's quants 0, 1, 30, 31
      const int pair = s * (kStageChunks * 16 / 68) + lane;
#pragma unroll
      for (int t = 0; t < kM; ++t) {
        const uint4* xb = reinterpret_cast<const uint4*>(sxq + t * token_bytes + pair * kPairBytes);
        const uint4 x0 = xb[0], x1 = xb[1], x2 = xb[2], x3 = xb[3];
        int s0 = __dp4a(static_cast<int>(wr[1]), static_cast<int>(x0.x), 0);
        int s1 = __dp4a(static_cast<int>(wr[5]), static_cast<int>(x1.x), 0);
        int s2 = __dp4a(static_cast<int>(wr[9]), static_cast<int>(x2.x), 0);
        int s3 = __dp4a(static_cast<int>(wr[13]), static_cast<int>(x3.x), 0);
        s0 = __dp4a(static_cast<int>(wr[2]), static_cast<int>(x0.y), s0);
        s1 = __dp4a(static_cast<int>(wr[6]), static_cast<int>(x1.y), s1);
        s2 = __dp4a(static_cast<int>(wr[10]), static_cast<int>(x2.y), s2);
        s3 = __dp4a(static_cast<int>(wr[14]), static_cast<int>(x3.y), s3);
        s0 = __dp4a(static_cast<int>(wr[3]), static_cast<int>(x0.z), s0);
        s1 = __dp4a(static_cast<int>(wr[7]), static_cast<int>(x1.z), s1);
        s2 = __dp4a(static_cast<int>(wr[11]), static_cast<int>(x2.z), s2);
        s3 = __dp4a(static_cast<int>(wr[15]), static_cast<int>(x3.z), s3);
        s0 = __dp4a(static_cast<int>(wr[4]), static_cast<int>(x0.w), s0);
        s1 = __dp4a(static_cast<int>(q7), static_cast<int>(x1.w), s1);
        s2 = __dp4a(static_cast<int>(wr[12]), static_cast<int>(x2.w), s2);
        s3 = __dp4a(static_cast<int>(wr[16]), static_cast<int>(x3.w), s3);
        acc[t] = fmaf(exact_float(s0 + s1), d0 * sxd[2 * pair * kM + t], acc[t]);
        acc[t] = fmaf(exact_float(s2 + s3), d1 * sxd[(2 * pair + 1) * kM + t], acc[t]);
      }
    }
    __syncwarp();  // every lane has read the stage before the next is written
    if (s == stages - 1) {
      const int64_t row = first_row + static_cast<int64_t>(i / stages) * grid_warps;
#pragma unroll
      for (int t = 0; t < kM; ++t) {
        float v = acc[t];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0) p.y[t * p.y_row + row] = v;
        acc[t] = 0.0f;
      }
    }
  }
}

template <int kM>
Status launch_m(const CudaDevice& device, const Args& p) {
  const auto kernel = &ggml_matvec_rows<kM>;
  const int warps = warps_for(p.nb);
  const int smem = static_cast<int>(smem_bytes(kM, p.nb, warps));
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem));
  if (per_sm < 1) return Status::unsupported("cuda matmul_ggml rows: no block of " + std::to_string(warps) + " warps fits an SM");
  const int64_t grid = std::min<int64_t>(static_cast<int64_t>(per_sm) * device.sm_count(), ceil_div(p.n, warps));
  return launch_after_quantiser(device, kernel, static_cast<unsigned>(grid), static_cast<unsigned>(warps * 32),
                                static_cast<size_t>(smem), p);
}

}  // namespace

bool fits(bool q8, int64_t m, int64_t nb, uintptr_t w, int64_t w_row_bytes) {
  return q8 && m >= 1 && m <= 4 && nb >= kGroupBlocks && nb % kGroupBlocks == 0 && w % 16 == 0 && w_row_bytes % 16 == 0 &&
         smem_bytes(m, nb, warps_for(nb)) <= kSmemLimit;
}

Status launch(const CudaDevice& device, const Args& p) {
  switch (p.m) {
    case 1: return launch_m<1>(device, p);
    case 2: return launch_m<2>(device, p);
    case 3: return launch_m<3>(device, p);
    case 4: return launch_m<4>(device, p);
    default: return Status::unsupported("cuda matmul_ggml rows: M out of 1 .. 4");
  }
}

}  // namespace dnnb::cuda_kernels::ggml_rows
