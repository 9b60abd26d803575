// Timing of one implementation on one problem: device timers (CUDA events, OpenCL profiling
// markers, host clock for CPU backends) around each launch after warm-up; the median and
// spread of the samples, achieved bandwidth against the minimal bytes and FLOP/s against the
// spec's FLOP model. `dnnblocks bench` prints and saves these.
#pragma once
#include <string>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/registry.h"

namespace dnnb {

struct BenchOptions {
  std::string op_glob = "*";
  std::string backend;      // "" = all; "cuda/variant" selects a variant
  std::string dtype;        // "" = all of the implementation's
  std::string device;       // "" = first device of the backend's kind
  std::string size;         // "shape[:params]"; "" = the spec's bench_problems
  int warmup = 10;
  int repetitions = 50;     // timed samples, each one launch
  double min_time_s = 0.0;  // keep sampling until this much device time is collected
};

struct BenchResult {
  std::string case_id;
  std::string device;
  std::string timer;         // "cuda-events", "opencl-profiling-markers", "host-clock"
  StatusCode status = StatusCode::ok;
  std::string reason;
  int samples = 0;
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0;
  double flops = 0, bytes = 0;          // per launch
  double working_set_bytes = 0;         // what the launch touches (for cache policy)
  double bytes_per_s() const { return median_ms > 0 ? bytes / (median_ms * 1e-3) : 0; }
  double flops_per_s() const { return median_ms > 0 ? flops / (median_ms * 1e-3) : 0; }
  double spread() const { return median_ms > 0 ? (p90_ms - p10_ms) / median_ms : 0; }
};

Result<std::vector<BenchResult>> run_bench(const BenchOptions& options);
nlohmann::json bench_to_json(const std::vector<BenchResult>& results);

// Device probes: small measurements a device kind registers from devices/ (they need the
// device's SDK): "empty_launch_ms" (an empty kernel launch: what a tiny op cannot go under)
// and "copy_bytes_per_s" (a large device-to-device copy, bytes read + written: the memory
// ceiling kernels are judged against).
struct DeviceProbe {
  DeviceKind kind;
  std::string name;
  std::function<Result<double>(DeviceRuntime&)> measure;
};
bool register_device_probe(DeviceProbe probe);
// Runs every probe of the device's kind: name -> value, or the reason it failed.
std::vector<std::pair<std::string, Result<double>>> run_device_probes(DeviceRuntime& device);

}  // namespace dnnb
