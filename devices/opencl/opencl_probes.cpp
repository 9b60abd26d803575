// OpenCL probes for bench: an empty kernel's launch time and clEnqueueCopyBuffer bandwidth
// over 1 GiB (bytes read + written), both timed with profiling markers on the queue.
#include <algorithm>
#include <vector>

#include "core/bench.h"
#include "core/registry.h"
#include "devices/opencl/opencl_device.h"

namespace dnnb {

namespace {

const char* kEmptySource = "__kernel void empty_kernel(void) {}\n";

Result<double> opencl_empty_launch_ms(DeviceRuntime& device) {
  constexpr int repetitions = 200;
  if (device.info().kind != DeviceKind::opencl) return Status::bad_input("not an OpenCL device");
  auto& cl = static_cast<OpenCLDevice&>(device);
  auto kernel = cl.kernel("probe_empty", kEmptySource, "empty_kernel");
  if (!kernel) return kernel.status();
  auto timer = cl.make_timer();
  if (!timer) return timer.status();
  const size_t global = 1;
  for (int i = 0; i < 20; ++i)
    DNNB_CL_TRY(clEnqueueNDRangeKernel(cl.queue(), *kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  DNNB_TRY((*timer)->start());
  for (int i = 0; i < repetitions; ++i)
    DNNB_CL_TRY(clEnqueueNDRangeKernel(cl.queue(), *kernel, 1, nullptr, &global, nullptr, 0, nullptr, nullptr));
  DNNB_TRY((*timer)->stop());
  auto ms = (*timer)->elapsed_ms();
  if (!ms) return ms.status();
  return *ms / repetitions;
}

Result<double> opencl_copy_bytes_per_s(DeviceRuntime& device) {
  constexpr size_t bytes = size_t(1) << 30;
  if (device.info().kind != DeviceKind::opencl) return Status::bad_input("not an OpenCL device");
  auto& cl = static_cast<OpenCLDevice&>(device);
  auto src = cl.allocate(bytes);
  if (!src) return src.status();
  auto dst = cl.allocate(bytes);
  if (!dst) return dst.status();
  const cl_uint pattern = 0x3f800000u;
  DNNB_CL_TRY(clEnqueueFillBuffer(cl.queue(), static_cast<cl_mem>((*src)->handle), &pattern, sizeof pattern, 0, bytes,
                                  0, nullptr, nullptr));
  auto timer = cl.make_timer();
  if (!timer) return timer.status();
  std::vector<double> samples;
  for (int rep = 0; rep < 13; ++rep) {
    DNNB_TRY((*timer)->start());
    DNNB_CL_TRY(clEnqueueCopyBuffer(cl.queue(), static_cast<cl_mem>((*src)->handle),
                                    static_cast<cl_mem>((*dst)->handle), 0, 0, bytes, 0, nullptr, nullptr));
    DNNB_TRY((*timer)->stop());
    auto ms = (*timer)->elapsed_ms();
    if (!ms) return ms.status();
    if (rep >= 3) samples.push_back(*ms);
  }
  std::sort(samples.begin(), samples.end());
  return 2.0 * bytes / (samples[samples.size() / 2] * 1e-3);
}

}  // namespace

DNNB_REGISTER(register_device_probe({DeviceKind::opencl, "empty_launch_ms", opencl_empty_launch_ms}));
DNNB_REGISTER(register_device_probe({DeviceKind::opencl, "copy_bytes_per_s", opencl_copy_bytes_per_s}));

}  // namespace dnnb
