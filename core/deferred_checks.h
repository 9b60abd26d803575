// Checks a launch leaves for its device's next synchronize(), so that a kernel which detects bad
// input (embedding's ids outside the table) reports it without making its launch wait for the
// device: the way torch's device-side asserts surface at the next synchronisation. A launch that
// blocked the host would stall the queue between back-to-back launches, which is what bench
// times and what a model's step does. Every device kind whose synchronize() drains a queue
// (CUDA, OpenCL) runs the checks deferred on it after draining.
#pragma once
#include <cstddef>
#include <functional>

#include "core/device.h"

namespace dnnb {

// `check` runs once, on the host, after the device's queue has drained: from the next
// synchronize() of `device`, which returns the first failing check's status. A check may hold
// host memory only (not device buffers): it may outlive the case that deferred it.
void defer_until_synchronize(const DeviceRuntime& device, std::function<Status()> check);

// Runs and forgets the checks deferred on `device` (its queue already drained): ok, or the first
// failure (the rest still run, so none is left behind for a later case).
Status run_deferred_checks(const DeviceRuntime& device);

// Checks deferred on `device` and not yet run. A kernel that keeps a slot per pending check
// synchronises the device once this reaches its slot count.
size_t deferred_check_count(const DeviceRuntime& device);

}  // namespace dnnb
