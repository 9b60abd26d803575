// The CUDA runtime of one device (cuda:N). Kernels in kernels/cuda launch on stream().
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "core/device.h"

namespace dnnb {

// Turns a failed CUDA call into an error Status naming the call, file and line.
Status cuda_status(cudaError_t err, const char* call, const char* file, int line);
#define DNNB_CUDA_TRY(call)                                                         \
  do {                                                                              \
    cudaError_t dnnb_err_ = (call);                                                 \
    if (dnnb_err_ != cudaSuccess) return ::dnnb::cuda_status(dnnb_err_, #call, __FILE__, __LINE__); \
  } while (0)
// After a kernel launch: the launch error, then (in checked builds) nothing else.
#define DNNB_CUDA_CHECK_LAUNCH() DNNB_CUDA_TRY(cudaGetLastError())

class CudaDevice final : public DeviceRuntime {
 public:
  CudaDevice(int ordinal, DeviceInfo info);
  ~CudaDevice() override;
  const DeviceInfo& info() const override { return info_; }
  Result<BufferPtr> allocate(size_t bytes) override;
  Status upload(Buffer& dst, size_t dst_offset, const void* src, size_t bytes) override;
  Status download(void* dst, const Buffer& src, size_t src_offset, size_t bytes) override;
  Status synchronize() override;
  void release(Buffer& buffer) noexcept override;
  // CUDA events on stream(), queued behind a device-side wait (devices/cuda/cuda_timer.cpp).
  Result<std::unique_ptr<DeviceTimer>> make_timer() override;
  // A one-thread kernel on stream() that spins for `nanoseconds` of %globaltimer
  // (devices/cuda/cuda_bench_hooks.cu).
  Status enqueue_spin(unsigned long long nanoseconds) const;

  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  // Makes this device current on the calling thread.
  Status activate() const;
  int sm_count() const { return sm_count_; }
  // Theoretical DRAM bandwidth (info().peaks, docs/devices.md); 0 when the driver reports no
  // memory clock or bus width. Kernels pick launch shapes by it (kernels/cuda/softmax_plan.h).
  double dram_peak_bytes_per_s() const { return dram_peak_bytes_per_s_; }

 private:
  int ordinal_;
  DeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
  double dram_peak_bytes_per_s_ = 0;
};

}  // namespace dnnb
