// Kernels that do not return until the test releases them, for the per-case watchdog test
// (tests/test_check_watchdog.cpp). Built only with CUDA (DNNB_TEST_CUDA_HANG).
#pragma once
#include "core/device.h"
#include "core/status.h"

namespace dnnb::testing {

// Queues on the device's stream a one-thread kernel that spins until cuda_hang_release():
// a synchronize after it does not return before then.
Status cuda_hang_launch(DeviceRuntime& device);
// Lets the spinning kernel end (a store to mapped host memory that the kernel polls).
void cuda_hang_release();

}  // namespace dnnb::testing
