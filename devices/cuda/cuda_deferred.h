// Checks a launch leaves for the next CudaDevice::synchronize(), so that a kernel which detects
// bad input (embedding's ids outside the table) reports it without making its launch wait for
// the GPU: the way torch's device-side asserts surface at the next synchronisation. A launch that
// blocked the host would stall the stream between back-to-back launches, which is what bench
// times and what a model's step does.
#pragma once
#include <functional>

#include "devices/cuda/cuda_device.h"

namespace dnnb {

// `check` runs once, on the host, after the device's stream has drained: from the next
// synchronize() of `device`, which returns the first failing check's status.
void defer_until_synchronize(const CudaDevice& device, std::function<Status()> check);

// Runs and forgets the checks deferred on `device` (its stream already drained): ok, or the first
// failure (the rest still run, so none is left behind for a later case).
Status run_deferred_checks(const CudaDevice& device);

// Checks deferred on `device` and not yet run.
size_t deferred_check_count(const CudaDevice& device);

}  // namespace dnnb
