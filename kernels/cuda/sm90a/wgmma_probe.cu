// The tensor-core ceiling of a Hopper GPU (wgmma_probe.h): each warpgroup issues a long chain of
// wgmma.mma_async m64n256k16 (bf16 or f16 inputs, f32 accumulation) with A and B read from
// shared memory through matrix descriptors, the instruction and operand path of the wgmma GEMM
// (gemm_wgmma.cu) without its loads, so its rate is the most a GEMM can reach on the device.
//
// Per CTA 3 warpgroups sharing one A tile (64 x 64 k, 8 KB) and one B tile (256 x 64 k, 32 KB),
// zero-filled, K-major in the 128-byte swizzle with 1024-byte aligned tiles as the descriptors
// say (the values are zeros, so the layout only has to be a valid one). Each loop trip:
// wgmma.fence, 4 wgmma (k = 0, 16, 32, 48 of the tiles) on the same 64 x 256 accumulator,
// commit, wait until at most 1 group is pending: one group is always in flight while the next
// is issued, as in the GEMM's main loop. Every wgmma of a warpgroup spans the SM's 4 tensor
// cores (a warp's 16 rows each), so one warpgroup with a group queued can keep them busy; 3
// give the issue slack the GEMM's 2 consumers have and more. 3 is also the most the register
// file holds: 128 f32 accumulators per thread, 154 registers x 384 threads (ptxas, no spills);
// the host asks the occupancy calculator how many CTAs fit per SM (1).
#include <algorithm>
#include <cstdint>

#include "devices/cuda/cuda_device.h"
#include "kernels/cuda/sm90a/wgmma.cuh"
#include "kernels/cuda/sm90a/wgmma_probe.h"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr int kProbeWarpgroups = 3;
inline constexpr int kProbeThreads = 128 * kProbeWarpgroups;
inline constexpr int kProbeKSteps = 4;                   // wgmma per commit group: one 64-wide k tile
inline constexpr int kProbeATileBytes = 64 * 64 * 2;     // 64 rows x 64 k of 16-bit: 8 KB
inline constexpr int kProbeBTileBytes = 256 * 64 * 2;    // 256 rows x 64 k: 32 KB
inline constexpr double kWgmmaFlop = 2.0 * 64 * 256 * 16;  // one m64n256k16

template <typename T>
__global__ void __launch_bounds__(kProbeThreads, 1) wgmma_probe_kernel(long long iterations, float* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // The tiles start on a 1024-byte boundary of the shared window (the 128-byte swizzle's
  // period, which the descriptors assume), rounded up by hand as the GEMM does: 1 KB spare.
  __shared__ __align__(1024) unsigned char smem[kProbeATileBytes + kProbeBTileBytes + 1024];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  unsigned char* tiles = smem + (((base + 1023u) & ~1023u) - base);
  for (int i = threadIdx.x; i < (kProbeATileBytes + kProbeBTileBytes) / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(tiles)[i] = make_uint4(0, 0, 0, 0);
  // The zeros were written by ordinary stores: visible to wgmma's async proxy, then to every
  // warpgroup.
  fence_proxy_async_shared();
  __syncthreads();
  const uint32_t a = (base + 1023u) & ~1023u;
  const uint32_t b = a + kProbeATileBytes;

  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  for (long long it = 0; it < iterations; ++it) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kProbeKSteps; ++kk) wgmma_m64n256k16<T, 0>(acc, desc_k_major(a + kk * 32), desc_k_major(b + kk * 32));
    wgmma_commit();
    wgmma_wait<1>();
  }
  wgmma_wait<0>();
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 128; ++i) {
    fence_operand(acc[i]);
    sum += acc[i];
  }
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
#endif
}

template <typename T>
Result<int> blocks_per_sm() {
  int blocks = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, wgmma_probe_kernel<T>, kProbeThreads, 0));
  return blocks;
}

}  // namespace

Result<WgmmaProbeGrid> wgmma_probe_grid(int device_ordinal, bool bf16) {
  int major = 0, minor = 0, sms = 0;
  DNNB_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_ordinal));
  DNNB_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device_ordinal));
  DNNB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_ordinal));
  if (major != 9 || minor != 0)
    return Status::unsupported("the wgmma probe is sm_90a code: compute capability 9.0 only, this device is " +
                               std::to_string(major) + "." + std::to_string(minor));
  auto per_sm = bf16 ? blocks_per_sm<__nv_bfloat16>() : blocks_per_sm<__half>();
  if (!per_sm) return per_sm.status();
  if (*per_sm < 1) return Status::error("the wgmma probe's CTA does not fit on an SM (occupancy 0)");
  WgmmaProbeGrid grid;
  grid.blocks_per_sm = *per_sm;
  grid.blocks = std::max(1, sms) * *per_sm;
  grid.threads = kProbeThreads;
  grid.flop_per_thread_iteration = kProbeKSteps * kWgmmaFlop / 128;  // per warpgroup trip / its threads
  grid.how = std::string("wgmma m64n256k16 ") + (bf16 ? "bf16" : "f16") +
             " -> f32 (wgmma.mma_async, A and B from shared memory descriptors, 128-byte swizzle, zeros), " +
             std::to_string(kProbeKSteps) + " per commit group with one group in flight, " +
             std::to_string(kProbeWarpgroups) + " warpgroups per CTA, " + std::to_string(*per_sm) + " CTA(s) per SM";
  return grid;
}

Status launch_wgmma_probe(const WgmmaProbeGrid& grid, bool bf16, long long iterations, float* out, cudaStream_t stream) {
  if (grid.threads != kProbeThreads || grid.blocks < 1)
    return Status::bad_input("launch_wgmma_probe: the grid does not come from wgmma_probe_grid");
  if (bf16)
    wgmma_probe_kernel<__nv_bfloat16><<<grid.blocks, kProbeThreads, 0, stream>>>(iterations, out);
  else
    wgmma_probe_kernel<__half><<<grid.blocks, kProbeThreads, 0, stream>>>(iterations, out);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

}  // namespace dnnb::cuda_kernels
