// Measured ceilings of an OpenCL device (core/ceilings.h, docs/roofline.md): the empty
// launch, DRAM copy and read streams over buffers far larger than the device's caches, and
// f32 FMA throughput. Kernels are OpenCL C 1.2 without extensions (NVIDIA's OpenCL and PoCL
// both build them), embedded below and built through OpenCLDevice::kernel() (whose error
// carries the build log). Samples are timed with the device's profiling markers.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/ceilings.h"
#include "core/registry.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb {

namespace {

// One float4 per work-item for the copy; the read kernel sums `per_item` float4 a global
// size apart (coalesced on GPUs, contiguous across the work-items PoCL vectorises) and stores
// only when the sum is an impossible value, so the loads cannot be dropped and nothing is
// written. FMA: 8 independent float4 chains per work-item, unrolled 4x.
const char* kCeilingSource = R"CLC(
#ifdef DNNB_USE_FMA
#define DNNB_MAD(a, b, c) fma(a, b, c)
#else
#define DNNB_MAD(a, b, c) mad(a, b, c)
#endif

__kernel void empty_kernel(void) {}

__kernel void copy_kernel(__global const float4* restrict src, __global float4* restrict dst) {
  const size_t i = get_global_id(0);
  dst[i] = src[i];
}

__kernel void read_kernel(__global const float4* restrict src, uint per_item, __global float* out) {
  const size_t first = get_global_id(0), stride = get_global_size(0);
  float4 acc = (float4)(0.0f);
  for (uint k = 0; k < per_item; ++k) acc += src[first + k * stride];
  const float sum = acc.x + acc.y + acc.z + acc.w;
  if (sum == -1.0f) out[0] = sum;
}

#define DNNB_STEP                 \
  a0 = DNNB_MAD(a0, m, c);        \
  a1 = DNNB_MAD(a1, m, c);        \
  a2 = DNNB_MAD(a2, m, c);        \
  a3 = DNNB_MAD(a3, m, c);        \
  a4 = DNNB_MAD(a4, m, c);        \
  a5 = DNNB_MAD(a5, m, c);        \
  a6 = DNNB_MAD(a6, m, c);        \
  a7 = DNNB_MAD(a7, m, c);

__kernel void fma_kernel(float mul, float add, int iterations, __global float* out) {
  const float4 m = (float4)(mul), c = (float4)(add);
  const float seed = (float)get_local_id(0) * 1e-3f;
  float4 a0 = (float4)(seed), a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f;
  float4 a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f;
  for (int i = 0; i < iterations; ++i) {
    DNNB_STEP DNNB_STEP DNNB_STEP DNNB_STEP
  }
  const float4 s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
  out[get_global_id(0)] = s.x + s.y + s.z + s.w;
}
)CLC";

// FLOP per work-item per iteration of fma_kernel: 4 steps x 8 chains x 4 lanes x 2.
constexpr double kFmaFlopPerItemIteration = 4 * 8 * 4 * 2;
constexpr cl_uint kReadPerItem = 16;

ProbePlan plan_for(const ProbeOptions& options) { return options.quick ? ProbePlan{1, 5, 0.01} : ProbePlan{2, 20, 0.05}; }

std::string mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

Result<OpenCLDevice*> opencl_of(DeviceRuntime& device) {
  if (device.info().kind != DeviceKind::opencl) return Status::bad_input(device.info().id + " is not an OpenCL device");
  return static_cast<OpenCLDevice*>(&device);
}

// fma() is exact in hardware where the device says so (CL_FP_FMA); elsewhere it may be
// emulated in software, so mad() (whatever the device does fastest) is used instead.
Result<bool> has_hardware_fma(OpenCLDevice& cl) {
  cl_device_fp_config config = 0;
  DNNB_CL_TRY(clGetDeviceInfo(cl.device_id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config, nullptr));
  return (config & CL_FP_FMA) != 0;
}

Result<cl_kernel> ceiling_kernel(OpenCLDevice& cl, const char* name) {
  auto fma = has_hardware_fma(cl);
  if (!fma) return fma.status();
  return cl.kernel("ceilings", kCeilingSource, name, *fma ? "-DDNNB_USE_FMA" : "");
}

// A power-of-two work-group size this kernel may use, at most 256.
Result<size_t> local_size(OpenCLDevice& cl, cl_kernel kernel) {
  size_t limit = 0;
  DNNB_CL_TRY(clGetKernelWorkGroupInfo(kernel, cl.device_id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof limit, &limit, nullptr));
  limit = std::min({limit, cl.max_work_group_size(), size_t(256)});
  size_t local = 1;
  while (local * 2 <= limit) local *= 2;
  return local;
}

template <typename T>
Status set_arg(cl_kernel kernel, cl_uint index, const T& value) {
  DNNB_CL_TRY(clSetKernelArg(kernel, index, sizeof(T), &value));
  return Status::ok();
}

Status enqueue_1d(OpenCLDevice& cl, cl_kernel kernel, size_t global, const size_t* local) {
  DNNB_CL_TRY(clEnqueueNDRangeKernel(cl.queue(), kernel, 1, nullptr, &global, local, 0, nullptr, nullptr));
  return Status::ok();
}




// Bytes of each DRAM buffer: many times the device's global memory cache, bounded by the
// largest allocation and a quarter of the global memory.
Result<size_t> dram_bytes(OpenCLDevice& cl, const ProbeOptions& options, size_t granule) {
  cl_ulong cache = 0, max_alloc = 0, global = 0;
  DNNB_CL_TRY(clGetDeviceInfo(cl.device_id(), CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, nullptr));
  DNNB_CL_TRY(clGetDeviceInfo(cl.device_id(), CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, nullptr));
  DNNB_CL_TRY(clGetDeviceInfo(cl.device_id(), CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, nullptr));
  size_t bytes = options.quick ? std::max<size_t>(size_t(128) << 20, 4 * cache)
                               : std::max<size_t>(size_t(1) << 30, 16 * cache);
  bytes = std::min({bytes, static_cast<size_t>(max_alloc), static_cast<size_t>(global / 4)});
  bytes = bytes / granule * granule;
  if (bytes == 0) return Status::skipped("the device allows no buffer large enough for a DRAM stream");
  return bytes;
}

// A fixed batch of back-to-back launches per sample, timed by the marker timer behind its lead
// (opencl_timer.cpp): the device's cost of a kernel in a stream of tiny ones. Fixed rather than
// calibrated per run, as on CUDA (cuda_ceilings.cu); 300 launches last ~2 ms on NVIDIA's
// OpenCL and ~3 ms on PoCL.
constexpr int kEmptyLaunches = 300;

Result<ProbeResult> empty_launch(DeviceRuntime& device, const ProbeOptions& options) {
  auto cl = opencl_of(device);
  if (!cl) return cl.status();
  auto kernel = ceiling_kernel(**cl, "empty_kernel");
  if (!kernel) return kernel.status();
  const ProbePlan plan = options.quick ? ProbePlan{2, 5, 0} : ProbePlan{5, 41, 0};
  const int count = options.quick ? kEmptyLaunches / 10 : kEmptyLaunches;
  auto ms = time_probe_samples(**cl, plan, [&]() -> Status {
    for (int i = 0; i < count; ++i) DNNB_TRY(enqueue_1d(**cl, *kernel, 1, nullptr));
    return Status::ok();
  });
  if (!ms) return ms.status();
  for (double& m : *ms) m = m * 1e-3 / count;
  return probe_result_from_samples(std::move(*ms), "empty kernel, global size 1, " + std::to_string(count) +
                                                       " back-to-back launches per sample queued ahead, profiling markers",
                                    SampleKind::time);
}

Result<ProbeResult> dram_copy(DeviceRuntime& device, const ProbeOptions& options) {
  auto cl = opencl_of(device);
  if (!cl) return cl.status();
  auto kernel = ceiling_kernel(**cl, "copy_kernel");
  if (!kernel) return kernel.status();
  auto local = local_size(**cl, *kernel);
  if (!local) return local.status();
  auto bytes = dram_bytes(**cl, options, 16 * *local);
  if (!bytes) return bytes.status();
  auto src = (*cl)->allocate(*bytes);
  if (!src) return src.status();
  auto dst = (*cl)->allocate(*bytes);
  if (!dst) return dst.status();
  cl_mem src_mem = static_cast<cl_mem>((*src)->handle), dst_mem = static_cast<cl_mem>((*dst)->handle);
  const cl_float one = 1.0f;
  DNNB_CL_TRY(clEnqueueFillBuffer((*cl)->queue(), src_mem, &one, sizeof one, 0, *bytes, 0, nullptr, nullptr));
  DNNB_TRY(set_arg(*kernel, 0, src_mem));
  DNNB_TRY(set_arg(*kernel, 1, dst_mem));
  auto launches = [&](long long count) -> Status {
    for (long long i = 0; i < count; ++i) DNNB_TRY(enqueue_1d(**cl, *kernel, *bytes / 16, &*local));
    return Status::ok();
  };
  const ProbePlan plan = plan_for(options);
  auto per_sample = calibrate_probe_count(**cl, plan.sample_s, 30, launches);
  if (!per_sample) return per_sample.status();
  auto ms = time_probe_samples(**cl, plan, [&] { return launches(*per_sample); });
  if (!ms) return ms.status();
  return probe_rates(std::move(*ms), 2.0 * *bytes * *per_sample,
               "float4 copy kernel " + mib(*bytes) + " -> " + mib(*bytes) + ", work-groups of " +
                   std::to_string(*local) + ", launches per sample: " + std::to_string(*per_sample) +
                   ", bytes read + written");
}

Result<ProbeResult> dram_read(DeviceRuntime& device, const ProbeOptions& options) {
  auto cl = opencl_of(device);
  if (!cl) return cl.status();
  auto kernel = ceiling_kernel(**cl, "read_kernel");
  if (!kernel) return kernel.status();
  auto local = local_size(**cl, *kernel);
  if (!local) return local.status();
  auto bytes = dram_bytes(**cl, options, 16 * kReadPerItem * *local);
  if (!bytes) return bytes.status();
  auto src = (*cl)->allocate(*bytes);
  if (!src) return src.status();
  auto sink = (*cl)->allocate(sizeof(cl_float));
  if (!sink) return sink.status();
  cl_mem src_mem = static_cast<cl_mem>((*src)->handle), sink_mem = static_cast<cl_mem>((*sink)->handle);
  const cl_float one = 1.0f;
  DNNB_CL_TRY(clEnqueueFillBuffer((*cl)->queue(), src_mem, &one, sizeof one, 0, *bytes, 0, nullptr, nullptr));
  DNNB_TRY(set_arg(*kernel, 0, src_mem));
  DNNB_TRY(set_arg(*kernel, 1, kReadPerItem));
  DNNB_TRY(set_arg(*kernel, 2, sink_mem));
  const size_t global = *bytes / (16 * kReadPerItem);
  auto launches = [&](long long count) -> Status {
    for (long long i = 0; i < count; ++i) DNNB_TRY(enqueue_1d(**cl, *kernel, global, &*local));
    return Status::ok();
  };
  const ProbePlan plan = plan_for(options);
  auto per_sample = calibrate_probe_count(**cl, plan.sample_s, 30, launches);
  if (!per_sample) return per_sample.status();
  auto ms = time_probe_samples(**cl, plan, [&] { return launches(*per_sample); });
  if (!ms) return ms.status();
  return probe_rates(std::move(*ms), static_cast<double>(*bytes) * *per_sample,
               "float4 read-reduce kernel over " + mib(*bytes) + ", " + std::to_string(kReadPerItem) +
                   " float4 per work-item, work-groups of " + std::to_string(*local) + ", " +
                   "launches per sample: " + std::to_string(*per_sample) + ", no writes");
}

Result<ProbeResult> f32_fma(DeviceRuntime& device, const ProbeOptions& options) {
  auto cl = opencl_of(device);
  if (!cl) return cl.status();
  auto fma = has_hardware_fma(**cl);
  if (!fma) return fma.status();
  auto kernel = ceiling_kernel(**cl, "fma_kernel");
  if (!kernel) return kernel.status();
  auto local = local_size(**cl, *kernel);
  if (!local) return local.status();
  cl_uint compute_units = 0;
  DNNB_CL_TRY(clGetDeviceInfo((*cl)->device_id(), CL_DEVICE_MAX_COMPUTE_UNITS, sizeof compute_units, &compute_units,
                              nullptr));
  // 8 work-groups per compute unit: a full SM on GPUs (2048 threads at 256), and enough
  // groups per core for PoCL to balance.
  const size_t global = *local * std::max<cl_uint>(1, compute_units) * 8;
  auto out = (*cl)->allocate(sizeof(cl_float) * global);
  if (!out) return out.status();
  cl_mem out_mem = static_cast<cl_mem>((*out)->handle);
  DNNB_TRY(set_arg(*kernel, 0, cl_float(0.999999f)));
  DNNB_TRY(set_arg(*kernel, 1, cl_float(1e-6f)));
  DNNB_TRY(set_arg(*kernel, 3, out_mem));
  auto launch = [&](long long iterations) -> Status {
    DNNB_TRY(set_arg(*kernel, 2, static_cast<cl_int>(std::min<long long>(iterations, 1 << 30))));
    return enqueue_1d(**cl, *kernel, global, &*local);
  };
  const ProbePlan plan = plan_for(options);
  auto iterations = calibrate_probe_count(**cl, plan.sample_s, 30, launch);
  if (!iterations) return iterations.status();
  const long long kept = std::min<long long>(*iterations, 1 << 30);
  auto ms = time_probe_samples(**cl, plan, [&] { return launch(kept); });
  if (!ms) return ms.status();
  return probe_rates(std::move(*ms), kFmaFlopPerItemIteration * static_cast<double>(global) * kept,
               std::string(*fma ? "fma()" : "mad()") + " on 8 independent float4 chains per work-item, " +
                   std::to_string(global) + " work-items in groups of " + std::to_string(*local) + ", " +
                   std::to_string(kept) + " iterations");
}

}  // namespace

DNNB_REGISTER(register_ceiling_probe({DeviceKind::opencl, "empty_launch_s", empty_launch}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::opencl, "dram_copy_bytes_per_s", dram_copy}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::opencl, "dram_read_bytes_per_s", dram_read}));
DNNB_REGISTER(register_ceiling_probe({DeviceKind::opencl, "f32_fma_flops_per_s", f32_fma}));

}  // namespace dnnb
