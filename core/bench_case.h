// One bench case made ready to time: host inputs, device buffer sets rotated so the working
// set exceeds the last-level cache (cold policy), a device timer, and the calls that launch
// the implementation on each set. Internal to core/bench*.cpp.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/bench.h"

namespace dnnb {

// Host inputs of the last problem, reused by every implementation of that problem (filling
// 10^8 elements costs seconds; every backend of one problem sees the same inputs).
struct BenchInputCache {
  std::string problem;
  std::vector<Tensor> inputs;
};

// Random inputs for a bench problem. Rows beyond the first 256 repeat them (row ops see
// realistic per-row data; filling stays under a second at 16384 x 8192). The fill matches
// check's seeded inputs on the first 256 rows.
Result<std::vector<Tensor>> make_bench_inputs(const OpSpec& spec, const Problem& problem, const Signature& sig);

// The last-level cache a memory-bound figure must exceed to be a DRAM figure, from the
// device's capabilities (CUDA L2, the CPU's largest cache level summed over its sharers,
// OpenCL's global memory cache); 0 when unknown.
double last_level_cache_bytes(const DeviceInfo& info);

class PreparedCase {
 public:
  // Allocates the sets and uploads the inputs to each. `result` receives the bytes, FLOP,
  // working set, cache and rotation figures; a non-ok Status ends the case.
  static Result<std::unique_ptr<PreparedCase>> prepare(const OpSpec& spec, const Implementation& impl,
                                                      DeviceRuntime& device, const Problem& problem,
                                                      const std::vector<Tensor>& host_inputs, const BenchOptions& options,
                                                      BenchResult& result);
  // One launch on the next set, with the optional injected delay, timed by the device timer.
  Result<double> timed_launch_s();
  // Untimed launches over every set (warm-up).
  Status warm_up(int launches_per_set);
  // Per-launch time of `launches` back-to-back launches inside one timed region.
  Result<double> batched_launch_s(int launches);
  void set_delay_s(double seconds) { delay_s_ = seconds; }
  DeviceRuntime& device() { return device_; }

 private:
  PreparedCase(const Implementation& impl, DeviceRuntime& device) : impl_(impl), device_(device) {}
  Status launch_next();

  const Implementation& impl_;
  DeviceRuntime& device_;
  Problem problem_;               // the calls refer to it
  std::vector<OpCall> calls_;     // one per buffer set
  size_t next_ = 0;
  std::unique_ptr<DeviceTimer> timer_;
  double delay_s_ = 0;
};

}  // namespace dnnb
