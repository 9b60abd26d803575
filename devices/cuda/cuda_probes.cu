// Small CUDA probes for bench: the time of an empty kernel launch (what a tiny op cannot go
// under) and device-to-device copy bandwidth (the memory ceiling kernels are judged against).
#include <algorithm>
#include <vector>

#include "core/bench.h"
#include "core/registry.h"
#include "devices/cuda/cuda_device.h"

namespace dnnb {

namespace {

__global__ void empty_kernel() {}

Result<double> cuda_empty_launch_ms(DeviceRuntime& device) {
  constexpr int repetitions = 200;
  if (device.info().kind != DeviceKind::cuda) return Status::bad_input("not a CUDA device");
  auto& cuda = static_cast<CudaDevice&>(device);
  DNNB_TRY(cuda.activate());
  auto timer = cuda.make_timer();
  if (!timer) return timer.status();
  for (int i = 0; i < 20; ++i) empty_kernel<<<1, 32, 0, cuda.stream()>>>();
  DNNB_CUDA_CHECK_LAUNCH();
  // Back-to-back launches timed together: the per-launch cost on a busy stream.
  DNNB_TRY((*timer)->start());
  for (int i = 0; i < repetitions; ++i) empty_kernel<<<1, 32, 0, cuda.stream()>>>();
  DNNB_CUDA_CHECK_LAUNCH();
  DNNB_TRY((*timer)->stop());
  auto ms = (*timer)->elapsed_ms();
  if (!ms) return ms.status();
  return *ms / repetitions;
}

// Device-to-device copy bandwidth (bytes read + bytes written per second), median of reps,
// over 1 GiB: far larger than the L2, so it is a DRAM figure.
Result<double> cuda_copy_bytes_per_s(DeviceRuntime& device) {
  constexpr size_t bytes = size_t(1) << 30;
  constexpr int repetitions = 20;
  if (device.info().kind != DeviceKind::cuda) return Status::bad_input("not a CUDA device");
  auto& cuda = static_cast<CudaDevice&>(device);
  DNNB_TRY(cuda.activate());
  void* src = nullptr;
  void* dst = nullptr;
  DNNB_CUDA_TRY(cudaMalloc(&src, bytes));
  cudaError_t err = cudaMalloc(&dst, bytes);
  if (err != cudaSuccess) {
    cudaFree(src);
    return cuda_status(err, "cudaMalloc", __FILE__, __LINE__);
  }
  std::vector<double> samples;
  Status status = Status::ok();
  auto timer = cuda.make_timer();
  if (!timer) status = timer.status();
  for (int i = 0; i < repetitions + 3 && status.is_ok(); ++i) {
    status = (*timer)->start();
    if (status.is_ok()) {
      cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda.stream());
      if (e != cudaSuccess) status = cuda_status(e, "cudaMemcpyAsync", __FILE__, __LINE__);
    }
    if (status.is_ok()) status = (*timer)->stop();
    if (status.is_ok()) {
      auto ms = (*timer)->elapsed_ms();
      if (!ms) status = ms.status();
      else if (i >= 3) samples.push_back(*ms);
    }
  }
  cudaFree(src);
  cudaFree(dst);
  if (!status.is_ok()) return status;
  std::sort(samples.begin(), samples.end());
  return 2.0 * bytes / (samples[samples.size() / 2] * 1e-3);
}

}  // namespace

DNNB_REGISTER(register_device_probe({DeviceKind::cuda, "empty_launch_ms", cuda_empty_launch_ms}));
DNNB_REGISTER(register_device_probe({DeviceKind::cuda, "copy_bytes_per_s", cuda_copy_bytes_per_s}));

}  // namespace dnnb
