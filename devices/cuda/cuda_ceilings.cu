// Measured ceilings of a CUDA device (core/ceilings.h, docs/roofline.md): the empty launch
// (device side) and the host's cost of a launch,
// DRAM copy and read streams over buffers many times the L2, a read stream that stays in the
// L2, FP32 FMA throughput, and f16/bf16 tensor-core throughput with f32 accumulation. Every
// sample is timed with CUDA events on the device's stream (DeviceTimer); every CUDA call is
// checked.
//
// The tensor figure is the ceiling the f16/bf16 products are judged against, so it must be the
// rate the hardware's fastest path reaches: on compute capability 9.0 (Hopper) that is wgmma
// (kernels/cuda/sm90a/wgmma_probe.cu, m64n256k16 from shared memory); the warp-level mma.sync
// reaches only about 60-70% of it there (cuBLAS's GEMMs run faster than mma.sync can). On other
// devices (no wgmma) it is mma.sync m16n8k16, and the how line says why.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/ceilings.h"
#include "core/registry.h"
#include "devices/cuda/cuda_device.h"
#include "kernels/cuda/sm90a/wgmma_probe.h"

namespace dnnb {

namespace {

// ---- Kernels ------------------------------------------------------------------------------

__global__ void empty_kernel() {}

// 16-byte loads and stores, four in flight per thread, grid-stride.
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__device__ __forceinline__ unsigned fold(uint4 v) { return v.x + v.y + v.z + v.w; }

// One value per block: the block's sum, so no load can be dropped.
__device__ __forceinline__ void write_block_sum(unsigned acc, unsigned* out) {
  __shared__ unsigned warp_sums[32];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total = 0;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += warp_sums[w];
    out[blockIdx.x] = total;
  }
}

// Read-reduce with 16-byte loads, four in flight per thread.
__global__ void read_kernel(const uint4* __restrict__ src, size_t n, unsigned* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    acc += fold(a) + fold(b) + fold(c) + fold(d);
  }
  for (; i < n; i += stride) acc += fold(src[i]);
  write_block_sum(acc, out);
}

// `passes` reads of a buffer that fits the L2; ld.global.cg skips L1, so each read is an
// L2 hit. n is a multiple of 4 x the grid size.
__global__ void cache_read_kernel(const uint4* __restrict__ src, size_t n, int passes, unsigned* out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = first; i < n; i += 4 * stride) {
      const uint4 a = __ldcg(src + i), b = __ldcg(src + i + stride), c = __ldcg(src + i + 2 * stride),
                  d = __ldcg(src + i + 3 * stride);
      acc += fold(a) + fold(b) + fold(c) + fold(d);
    }
  }
  write_block_sum(acc, out);
}

constexpr int kFmaChains = 8;
constexpr int kFmaUnroll = 16;

// kFmaChains independent FMA chains per thread in registers; the unrolled body keeps loop
// overhead (which takes issue slots from the FMAs) under 3%.
__global__ void fma_kernel(float mul, float add, long long iterations, float* out) {
  float acc[kFmaChains];
#pragma unroll
  for (int k = 0; k < kFmaChains; ++k) acc[k] = threadIdx.x * 1e-3f + k;
  for (long long i = 0; i < iterations; ++i) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kFmaChains; ++k) acc[k] = fmaf(acc[k], mul, add);
    }
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kFmaChains; ++k) sum += acc[k];
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

constexpr int kMmaChains = 4;               // independent accumulator tiles per warp
constexpr double kMmaFlop = 16.0 * 8 * 16 * 2;  // m16n8k16, 2 FLOP per multiply-add

// kMmaChains independent m16n8k16 MMAs per iteration, operands in registers (A: 4 x 32-bit
// of packed pairs, B: 2, C/D: 4 f32). The values are small so the sums stay finite.
template <bool kBf16>
__global__ void mma_kernel(uint32_t a_bits, uint32_t b_bits, long long iterations, float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t a0 = a_bits, a1 = a_bits ^ (threadIdx.x & 1u), a2 = a_bits, a3 = a_bits ^ (threadIdx.x & 2u);
  const uint32_t b0 = b_bits, b1 = b_bits ^ (threadIdx.x & 1u);
  float d[kMmaChains][4] = {};
  for (long long i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) {
      if constexpr (kBf16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
    }
  }
  float sum = 0;
#pragma unroll
  for (int c = 0; c < kMmaChains; ++c) sum += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
#else
  __trap();  // built for sm_90: never reached
#endif
}

// ---- Host side ----------------------------------------------------------------------------

ProbePlan plan_for(const ProbeOptions& options) { return options.quick ? ProbePlan{1, 5, 0.004} : ProbePlan{3, 30, 0.05}; }

std::string mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

Result<CudaDevice*> cuda_of(DeviceRuntime& device) {
  if (device.info().kind != DeviceKind::cuda) return Status::bad_input(device.info().id + " is not a CUDA device");
  auto* cuda = static_cast<CudaDevice*>(&device);
  DNNB_TRY(cuda->activate());
  return cuda;
}

Result<int> attribute(const CudaDevice& cuda, cudaDeviceAttr what) {
  int value = 0;
  DNNB_CUDA_TRY(cudaDeviceGetAttribute(&value, what, cuda.ordinal()));
  return value;
}

// Blocks of `threads` that fill every SM to its thread limit.
Result<int> full_grid(const CudaDevice& cuda, int threads) {
  auto per_sm = attribute(cuda, cudaDevAttrMaxThreadsPerMultiProcessor);
  if (!per_sm) return per_sm.status();
  return std::max(1, cuda.sm_count()) * std::max(1, *per_sm / threads);
}

// A fixed batch of back-to-back empty launches per sample, timed by the event timer behind its
// lead (cuda_timer.cpp): the device's own cost of a kernel in a stream of tiny kernels, which
// the host's launch path does not enter. Fixed rather than calibrated per run (a count that
// moved between runs moved the figure with it). 500 launches stay inside the launch queue
// (about a thousand entries: a batch beyond it made the host wait for the spin, and the lead
// covered none of the rest); they take ~0.7 ms of device time and ~1.3 ms of host time.
constexpr long long kEmptyLaunches = 500;

Status launch_empty(cudaStream_t stream, long long count) {
  for (long long i = 0; i < count; ++i) empty_kernel<<<1, 32, 0, stream>>>();
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

Result<ProbeResult> empty_launch(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  const ProbePlan plan = options.quick ? ProbePlan{2, 5, 0} : ProbePlan{5, 41, 0};
  const long long count = options.quick ? kEmptyLaunches / 10 : kEmptyLaunches;
  auto ms = time_probe_samples(**cuda, plan, [&] { return launch_empty((*cuda)->stream(), count); });
  if (!ms) return ms.status();
  for (double& m : *ms) m = m * 1e-3 / static_cast<double>(count);
  return probe_result_from_samples(std::move(*ms), "empty kernel <<<1, 32>>>, " + std::to_string(count) +
                                                       " back-to-back launches per sample queued ahead, CUDA events",
                                    SampleKind::time);
}

// The same empty kernel as kEmptyLaunches nodes of one CUDA graph, one graph launch per sample:
// the device's cost of a kernel whose launch the graph prepared. Unlike the stream figure above,
// which sits at a different level in each process (1.25-1.42 us on the H200's legacy stream,
// 1.43-1.64 us on created streams, each level steady within 0.1% inside its process: the stream's
// own path to the GPU, not the GPU), this one repeats to 0.01% across processes (0.681 us on
// the H200): the launch floor of a device, for ops that run in graphs.
Result<ProbeResult> graph_launch(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  const ProbePlan plan = options.quick ? ProbePlan{2, 5, 0} : ProbePlan{5, 41, 0};
  const long long count = options.quick ? kEmptyLaunches / 10 : kEmptyLaunches;
  cudaStream_t stream = (*cuda)->stream();
  cudaGraph_t graph = nullptr;
  DNNB_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const Status captured = launch_empty(stream, count);
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);  // always ends the capture
  DNNB_TRY(captured);
  DNNB_CUDA_TRY(ended);
  std::unique_ptr<CUgraph_st, decltype(&cudaGraphDestroy)> graph_owner(graph, cudaGraphDestroy);
  cudaGraphExec_t exec = nullptr;
  DNNB_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  std::unique_ptr<CUgraphExec_st, decltype(&cudaGraphExecDestroy)> exec_owner(exec, cudaGraphExecDestroy);
  auto ms = time_probe_samples(**cuda, plan, [&]() -> Status {
    DNNB_CUDA_TRY(cudaGraphLaunch(exec, stream));
    return Status::ok();
  });
  if (!ms) return ms.status();
  for (double& m : *ms) m = m * 1e-3 / static_cast<double>(count);
  return probe_result_from_samples(std::move(*ms), "empty kernel <<<1, 32>>> as " + std::to_string(count) +
                                                       " nodes of one CUDA graph, one graph launch per sample, CUDA events",
                                   SampleKind::time);
}

// The host's side of the same stream of launches: host time per cudaLaunchKernel while the
// queue has room (the GPU drains it faster than the host fills it). A property of the host
// CPU and driver, not of the GPU: on a shared VM it moves with the other tenants.
Result<ProbeResult> host_launch(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  const int samples = options.quick ? 5 : 41;
  const long long count = options.quick ? kEmptyLaunches / 10 : kEmptyLaunches;
  std::vector<double> seconds;
  for (int i = -2; i < samples; ++i) {  // two warm-ups
    DNNB_TRY((*cuda)->synchronize());
    const auto t0 = std::chrono::steady_clock::now();
    DNNB_TRY(launch_empty((*cuda)->stream(), count));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 0) seconds.push_back(s / static_cast<double>(count));
  }
  DNNB_TRY((*cuda)->synchronize());
  return probe_result_from_samples(std::move(seconds), "host time per launch of " + std::to_string(count) +
                                                           " back-to-back empty kernels, steady clock",
                                   SampleKind::time);
}

// Bytes of each DRAM buffer: >= 2 GiB in full mode (40x the H200's L2), bounded by a quarter
// of the free memory per buffer.
Result<size_t> dram_bytes(const ProbeOptions& options) {
  size_t free_bytes = 0, total = 0;
  DNNB_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
  const size_t want = options.quick ? size_t(512) << 20 : size_t(2) << 30;
  return std::min(want, free_bytes / 4) / 4096 * 4096;
}

std::string rate_text(double bytes_per_s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f TB/s", bytes_per_s / 1e12);
  return text;
}

// The better of two copies of the same buffers: the 16-byte copy kernel and cudaMemcpyAsync
// device to device. Neither wins everywhere: on the H200 the driver's copy measures 4.22 TB/s
// where this kernel measures 3.93, so a kernel-only ceiling would make "% of copy" read ~7%
// high. Both are kept in `how`.
Result<ProbeResult> dram_copy(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  const ProbePlan plan = plan_for(options);
  auto bytes = dram_bytes(options);
  if (!bytes) return bytes.status();
  auto src = (*cuda)->allocate(*bytes);
  if (!src) return src.status();
  auto dst = (*cuda)->allocate(*bytes);
  if (!dst) return dst.status();
  cudaStream_t stream = (*cuda)->stream();
  DNNB_CUDA_TRY(cudaMemsetAsync((*src)->handle, 1, *bytes, stream));
  auto blocks = full_grid(**cuda, 256);
  if (!blocks) return blocks.status();
  constexpr int kLaunches = 4;
  const double traffic = 2.0 * *bytes * kLaunches;  // bytes read + written per sample
  auto kernel_ms = time_probe_samples(**cuda, plan, [&]() -> Status {
    for (int i = 0; i < kLaunches; ++i)
      copy_kernel<<<*blocks, 256, 0, stream>>>(static_cast<const uint4*>((*src)->handle),
                                               static_cast<uint4*>((*dst)->handle), *bytes / 16);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
  if (!kernel_ms) return kernel_ms.status();
  auto memcpy_ms = time_probe_samples(**cuda, plan, [&]() -> Status {
    for (int i = 0; i < kLaunches; ++i)
      DNNB_CUDA_TRY(cudaMemcpyAsync((*dst)->handle, (*src)->handle, *bytes, cudaMemcpyDeviceToDevice, stream));
    return Status::ok();
  });
  if (!memcpy_ms) return memcpy_ms.status();
  const std::string sizes = mib(*bytes) + " -> " + mib(*bytes) + ", " + std::to_string(kLaunches) +
                            " copies per sample, bytes read + written";
  auto by_kernel = probe_rates(std::move(*kernel_ms), traffic, "");
  if (!by_kernel) return by_kernel.status();
  auto by_memcpy = probe_rates(std::move(*memcpy_ms), traffic, "");
  if (!by_memcpy) return by_memcpy.status();
  const bool memcpy_wins = by_memcpy->value >= by_kernel->value;
  ProbeResult best = memcpy_wins ? *by_memcpy : *by_kernel;
  best.how = std::string("better of cudaMemcpyAsync device to device (") + rate_text(by_memcpy->value) +
             (memcpy_wins ? ", kept" : "") + ") and a copy kernel of 16-byte loads/stores, " +
             std::to_string(*blocks) + "x256 threads (" + rate_text(by_kernel->value) +
             (memcpy_wins ? "" : ", kept") + "); " + sizes;
  return best;
}

Result<ProbeResult> dram_read(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  const ProbePlan plan = plan_for(options);
  auto bytes = dram_bytes(options);
  if (!bytes) return bytes.status();
  const size_t read_bytes = 2 * *bytes;  // the copy probe's traffic, read only
  auto src = (*cuda)->allocate(read_bytes);
  if (!src) return src.status();
  auto blocks = full_grid(**cuda, 256);
  if (!blocks) return blocks.status();
  auto partials = (*cuda)->allocate(sizeof(unsigned) * *blocks);
  if (!partials) return partials.status();
  cudaStream_t stream = (*cuda)->stream();
  DNNB_CUDA_TRY(cudaMemsetAsync((*src)->handle, 1, read_bytes, stream));
  constexpr int kLaunches = 4;
  auto ms = time_probe_samples(**cuda, plan, [&]() -> Status {
    for (int i = 0; i < kLaunches; ++i)
      read_kernel<<<*blocks, 256, 0, stream>>>(static_cast<const uint4*>((*src)->handle), read_bytes / 16,
                                               static_cast<unsigned*>((*partials)->handle));
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
  if (!ms) return ms.status();
  return probe_rates(std::move(*ms), static_cast<double>(read_bytes) * kLaunches,
               "read-reduce kernel, 16-byte loads, " + mib(read_bytes) + ", " + std::to_string(*blocks) +
                   "x256 threads, one sum written per block, " + std::to_string(kLaunches) + " launches per sample");
}

// The L2 read rate depends on where a buffer lands: on the H200 one process's allocations of the
// same size read at 8.61-8.85 TB/s (2.7% apart), each steady within 0.1%,
// which moved a one-buffer figure 1.2-2.5% between runs. So the samples are spread over
// kCacheAllocations buffers, all held at once (each lands elsewhere), and pooled: the median
// is the typical placement's rate, repeatable within 0.5% between processes where one buffer
// was not, and the spread shows the placements' range.
constexpr int kCacheAllocations = 6;

Result<ProbeResult> cache_read(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  const ProbePlan plan = plan_for(options);
  auto l2 = attribute(**cuda, cudaDevAttrL2CacheSize);
  if (!l2) return l2.status();
  if (*l2 <= 0) return Status::skipped("the device reports no L2 cache");
  auto blocks = full_grid(**cuda, 256);
  if (!blocks) return blocks.status();
  // Half the L2, in whole rounds of four 16-byte loads per thread of the grid.
  const size_t round = static_cast<size_t>(*blocks) * 256 * 4 * 16;
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(*l2) / 2 / round) * round;
  auto partials = (*cuda)->allocate(sizeof(unsigned) * *blocks);
  if (!partials) return partials.status();
  cudaStream_t stream = (*cuda)->stream();
  const int allocations = options.quick ? 2 : kCacheAllocations;
  std::vector<BufferPtr> buffers;
  for (int a = 0; a < allocations; ++a) {
    auto src = (*cuda)->allocate(bytes);
    if (!src) return src.status();
    DNNB_CUDA_TRY(cudaMemsetAsync((*src)->handle, 1, bytes, stream));
    buffers.push_back(std::move(*src));
  }
  const void* src = nullptr;
  auto launch = [&](long long passes) -> Status {
    cache_read_kernel<<<*blocks, 256, 0, stream>>>(static_cast<const uint4*>(src), bytes / 16,
                                                   static_cast<int>(passes), static_cast<unsigned*>((*partials)->handle));
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  };
  src = buffers.front()->handle;
  auto passes = calibrate_probe_count(**cuda, plan.sample_s, 40, launch);
  if (!passes) return passes.status();
  const long long kept = std::min(*passes, 1ll << 30);
  // The plan's samples shared out over the buffers, a warm-up each (it loads that buffer into
  // the L2).
  const ProbePlan per_buffer{1, std::max(1, (plan.samples + allocations - 1) / allocations), plan.sample_s};
  std::vector<double> ms;
  for (const auto& buffer : buffers) {
    src = buffer->handle;
    auto part = time_probe_samples(**cuda, per_buffer, [&] { return launch(kept); });
    if (!part) return part.status();
    ms.insert(ms.end(), part->begin(), part->end());
  }
  return probe_rates(std::move(ms), static_cast<double>(bytes) * kept,
               "ld.global.cg read-reduce over " + mib(bytes) + " (1/2 of the " + mib(*l2) + " L2), " +
                   std::to_string(kept) + " passes per launch, " + std::to_string(*blocks) + "x256 threads; samples pooled over " +
                   std::to_string(allocations) + " buffers held at once (the rate depends on placement)");
}

// Launches `kernel(iterations)` (which checks its launch) over `blocks` x `threads`; samples in
// FLOP/s.
Result<ProbeResult> measure_flops(CudaDevice& cuda, const ProbeOptions& options, int blocks, int threads,
                                  double flop_per_thread_iteration,
                                  const std::function<Status(long long iterations, float* out)>& kernel,
                                  const std::string& how) {
  const ProbePlan plan = plan_for(options);
  auto out = cuda.allocate(sizeof(float) * blocks * threads);
  if (!out) return out.status();
  auto launch = [&](long long iterations) { return kernel(iterations, static_cast<float*>((*out)->handle)); };
  auto iterations = calibrate_probe_count(cuda, plan.sample_s, 40, launch);
  if (!iterations) return iterations.status();
  auto ms = time_probe_samples(cuda, plan, [&] { return launch(*iterations); });
  if (!ms) return ms.status();
  const double flop = flop_per_thread_iteration * static_cast<double>(blocks) * threads * *iterations;
  return probe_rates(std::move(*ms), flop,
               how + ", " + std::to_string(blocks) + "x" + std::to_string(threads) + " threads, " +
                   std::to_string(*iterations) + " iterations");
}

Result<ProbeResult> f32_fma(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  cudaStream_t stream = (*cuda)->stream();
  auto blocks = full_grid(**cuda, 256);
  if (!blocks) return blocks.status();
  return measure_flops(
      **cuda, options, *blocks, 256, 2.0 * kFmaChains * kFmaUnroll,
      [&](long long iterations, float* out) -> Status {
        fma_kernel<<<*blocks, 256, 0, stream>>>(0.999999f, 1e-6f, iterations, out);
        DNNB_CUDA_CHECK_LAUNCH();
        return Status::ok();
      },
      "FFMA, " + std::to_string(kFmaChains) + " independent chains per thread in registers");
}

// mma.sync m16n8k16, the warp-level MMA: the tensor ceiling of devices without wgmma. `why`
// says why this device is measured with it.
template <bool kBf16>
Result<ProbeResult> tensor_mma_sync(CudaDevice& cuda, const ProbeOptions& options, const std::string& why) {
  cudaStream_t stream = cuda.stream();
  auto blocks = full_grid(cuda, 256);
  if (!blocks) return blocks.status();
  // Packed pairs of 0.0039 (f16 0x1c00, bf16 0x3b80).
  const uint32_t bits = kBf16 ? 0x3b803b80u : 0x1c001c00u;
  // Per thread per iteration: kMmaChains MMAs per warp / 32 threads.
  return measure_flops(
      cuda, options, *blocks, 256, kMmaChains * kMmaFlop / 32,
      [&](long long iterations, float* out) -> Status {
        mma_kernel<kBf16><<<*blocks, 256, 0, stream>>>(bits, bits, iterations, out);
        DNNB_CUDA_CHECK_LAUNCH();
        return Status::ok();
      },
      std::string("mma.sync.aligned.m16n8k16 ") + (kBf16 ? "bf16" : "f16") + " -> f32 (" + why + "), " +
          std::to_string(kMmaChains) + " independent tiles per warp, operands in registers");
}

// wgmma m64n256k16 from shared memory (kernels/cuda/sm90a/wgmma_probe.cu): compute capability
// 9.0 only.
template <bool kBf16>
Result<ProbeResult> tensor_wgmma(CudaDevice& cuda, const ProbeOptions& options) {
  auto grid = cuda_kernels::wgmma_probe_grid(cuda.ordinal(), kBf16);
  if (!grid) return grid.status();
  cudaStream_t stream = cuda.stream();
  return measure_flops(
      cuda, options, grid->blocks, grid->threads, grid->flop_per_thread_iteration,
      [&](long long iterations, float* out) {
        return cuda_kernels::launch_wgmma_probe(*grid, kBf16, iterations, out, stream);
      },
      grid->how);
}

// The f16/bf16 tensor ceiling: wgmma where the device has it (compute capability 9.0, what
// the sm_90a code runs on), else mma.sync. A failing wgmma probe is an error, not a reason to
// measure mma.sync instead: the ceiling would be silently lower.
template <bool kBf16>
Result<ProbeResult> tensor_flops(DeviceRuntime& device, const ProbeOptions& options) {
  auto cuda = cuda_of(device);
  if (!cuda) return cuda.status();
  auto major = attribute(**cuda, cudaDevAttrComputeCapabilityMajor);
  if (!major) return major.status();
  auto minor = attribute(**cuda, cudaDevAttrComputeCapabilityMinor);
  if (!minor) return minor.status();
  if (*major == 9 && *minor == 0) return tensor_wgmma<kBf16>(**cuda, options);
  if (*major < 8) return Status::skipped("mma.sync m16n8k16 with bf16 needs sm_80 or later");
  return tensor_mma_sync<kBf16>(**cuda, options,
                                "compute capability " + std::to_string(*major) + "." + std::to_string(*minor) +
                                    " has no wgmma: the warp-level MMA's rate");
}

}  // namespace

DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "empty_launch_s", empty_launch}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "graph_launch_s", graph_launch}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "host_launch_s", host_launch}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "dram_copy_bytes_per_s", dram_copy}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "dram_read_bytes_per_s", dram_read}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "cache_read_bytes_per_s", cache_read}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "f32_fma_flops_per_s", f32_fma}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "f16_tensor_flops_per_s", tensor_flops<false>}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::cuda, "bf16_tensor_flops_per_s", tensor_flops<true>}));

}  // namespace dnnb
