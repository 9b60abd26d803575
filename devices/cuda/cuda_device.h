// The CUDA runtime of one device (cuda:N). Kernels in kernels/cuda launch on stream().
#pragma once
#include <cuda_runtime.h>

#include <list>
#include <mutex>
#include <string>
#include <vector>

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
  // CUDA graphs: the first call with a key runs the steps once as they are, in order, on
  // stream() (first-use set-up, such as allocations, kernel attributes and occupancy queries,
  // happens outside a recording), then records them by stream capture and replays the graph, so
  // that call's results are the replay's; every later call with the key replays it. While
  // recording, a step goes on one of kLanes streams (the lane of a step it follows where that
  // lane is free, else an unused one) behind events of the steps it follows on other lanes, so
  // the graph keeps only the steps' own dependencies and independent steps (a layer's q, k and
  // v projections) run side by side. The kRecordings latest graphs are kept.
  Status run_recorded(const std::string& key, const std::vector<LaunchStep>& steps) override;
  const char* recording() const override { return stream_ != nullptr ? "CUDA graph" : ""; }
  // A one-thread kernel on stream() that spins for `nanoseconds` of %globaltimer
  // (devices/cuda/cuda_bench_hooks.cu).
  Status enqueue_spin(unsigned long long nanoseconds) const;

  int ordinal() const { return ordinal_; }
  // The stream kernels launch on: the device's own, or while run_recorded records, the lane of
  // the step being recorded.
  cudaStream_t stream() const { return current_; }
  // Makes this device current on the calling thread.
  Status activate() const;
  int sm_count() const { return sm_count_; }
  // Theoretical DRAM bandwidth (info().peaks, docs/devices.md); 0 when the driver reports no
  // memory clock or bus width. Kernels pick launch shapes by it (kernels/cuda/softmax_plan.h).
  double dram_peak_bytes_per_s() const { return dram_peak_bytes_per_s_; }

 private:
  // As many as bench's input sets of one case (core/bench_case.cpp, kMaxRotationSets), so a
  // case rotating through its sets replays each set's graph rather than recording it again.
  static constexpr size_t kRecordings = 1024;
  struct Recording {
    std::string key;
    cudaGraphExec_t exec;
  };

  int ordinal_;
  DeviceInfo info_;
  static constexpr int kLanes = 4;
  Status record_steps(const std::vector<LaunchStep>& steps);

  std::mutex recordings_mutex_;
  std::list<Recording> recordings_;  // the most recently run first
  cudaStream_t lanes_[kLanes] = {};  // lanes_[0] is stream_; the others made on first use
  std::vector<cudaEvent_t> events_;  // one per step of the largest recording so far, and a fork
  cudaStream_t current_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int sm_count_ = 0;
  double dram_peak_bytes_per_s_ = 0;
};

}  // namespace dnnb
