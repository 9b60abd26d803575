// CUDA event timing on the device's stream: what bench reports for CUDA kernels.
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
    DNNB_CUDA_TRY(cudaEventRecord(start_, device_.stream()));
    return Status::ok();
  }
  Status stop() override {
    DNNB_CUDA_TRY(cudaEventRecord(stop_, device_.stream()));
    return Status::ok();
  }
  Result<double> elapsed_ms() override {
    DNNB_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0;
    DNNB_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms);
  }
  const char* source() const override { return "cuda-events"; }

 private:
  const CudaDevice& device_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};
}  // namespace

Result<std::unique_ptr<DeviceTimer>> CudaDevice::make_timer() {
  auto timer = std::make_unique<CudaEventTimer>(*this);
  DNNB_TRY(timer->init());
  return std::unique_ptr<DeviceTimer>(std::move(timer));
}

}  // namespace dnnb
