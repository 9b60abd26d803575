// CUDA event timing on the device's stream: what bench reports for CUDA kernels.
//
// Why a lead: a start event recorded on an idle GPU completes at once, and the GPU then waits
// for the host to queue the launch and the stop event (2.5-5 us a launch on the GPU machine's
// VM, more when it is busy). That wait would be timed as if it were the kernel's: ~2% of a
// 160 us kernel, most of a 3 us one, and it moves with the host's load. So start() first queues
// a one-thread spin kernel (CudaDevice::enqueue_spin) long enough for the host to queue
// everything up to stop(): the events then bracket device work alone. The lead (TimerLead,
// core/device.h) follows the host's previous start..stop span; stop() checks whether the GPU had already
// passed the start event when the host finished (late(): the lead was too short, the sample
// may hold host gaps) and callers that care take that sample again.
#include "devices/cuda/cuda_device.h"

namespace dnnb {

namespace {
class CudaEventTimer final : public DeviceTimer {
 public:
  explicit CudaEventTimer(const CudaDevice& device) : device_(device) {}
  ~CudaEventTimer() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  Status init() {
    DNNB_TRY(device_.activate());
    DNNB_CUDA_TRY(cudaEventCreate(&start_));
    DNNB_CUDA_TRY(cudaEventCreate(&stop_));
    return Status::ok();
  }
  Status start() override {
    DNNB_TRY(device_.enqueue_spin(static_cast<unsigned long long>(lead_.seconds() * 1e9)));
    DNNB_CUDA_TRY(cudaEventRecord(start_, device_.stream()));
    lead_.host_started();
    return Status::ok();
  }
  Status stop() override {
    DNNB_CUDA_TRY(cudaEventRecord(stop_, device_.stream()));
    lead_.host_stopped();
    const cudaError_t reached = cudaEventQuery(start_);
    if (reached == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is the expected answer, not a failure to keep
      late_ = false;
    } else {
      DNNB_CUDA_TRY(reached);
      late_ = true;
    }
    return Status::ok();
  }
  Result<double> elapsed_ms() override {
    DNNB_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0;
    DNNB_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms);
  }
  const char* source() const override { return "cuda-events"; }
  bool late() const override { return late_; }

 private:
  const CudaDevice& device_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  TimerLead lead_;
  bool late_ = false;
};
}  // namespace

Result<std::unique_ptr<DeviceTimer>> CudaDevice::make_timer() {
  auto timer = std::make_unique<CudaEventTimer>(*this);
  DNNB_TRY(timer->init());
  return std::unique_ptr<DeviceTimer>(std::move(timer));
}

}  // namespace dnnb
