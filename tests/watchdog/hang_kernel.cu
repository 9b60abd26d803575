#include "tests/watchdog/hang_kernel.h"

#include "devices/cuda/cuda_device.h"

namespace dnnb::testing {

namespace {

volatile int* g_release_flag = nullptr;  // mapped host memory: the host's store reaches the kernel

__global__ void spin_until_released(volatile int* release) {
  while (*release == 0) {
  }
}

}  // namespace

Status cuda_hang_launch(DeviceRuntime& device) {
  auto& cuda = static_cast<CudaDevice&>(device);
  DNNB_TRY(cuda.activate());
  if (g_release_flag == nullptr) {
    void* p = nullptr;
    DNNB_CUDA_TRY(cudaHostAlloc(&p, sizeof(int), cudaHostAllocMapped));
    g_release_flag = static_cast<volatile int*>(p);
  }
  *g_release_flag = 0;
  int* device_flag = nullptr;
  DNNB_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flag), const_cast<int*>(g_release_flag), 0));
  spin_until_released<<<1, 1, 0, cuda.stream()>>>(device_flag);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

void cuda_hang_release() {
  if (g_release_flag != nullptr) *g_release_flag = 1;
}

}  // namespace dnnb::testing
