// `dnnblocks bench`: every implementation timed on the spec's bench problems (or a size sweep)
// through Google Benchmark, with device timers (CUDA events, OpenCL profiling events, the host
// clock for CPU backends) as manual time, after warm-up, with buffers rotated so memory-bound
// figures are DRAM figures. Each result is judged against the device's measured ceilings
// (core/ceilings.h): bytes/s, FLOP/s, arithmetic intensity, the roofline bound and the % of
// it reached. The output file keeps Google Benchmark's JSON layout plus our keys
// (docs/bench-json.md).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ceilings.h"
#include "core/registry.h"

namespace dnnb {

enum class CachePolicy { cold, hot };
const char* to_string(CachePolicy policy);

struct BenchOptions {
  std::string op_glob = "*";
  std::string backend;              // "" = all; "cuda,opencl"; "cuda/variant" selects a variant
  bool all_variants = false;        // the alternatives too (`--variants all`), not only defaults
  std::string dtype;                // "" = all of the implementation's
  std::vector<std::string> devices; // empty = first device of each backend's kind
  std::string size;                 // "shape[:params]"; "" = the spec's bench problems
  bool sweep = false;               // rows 1, 4, 16, ... up to each bench problem's rows
  bool nodes = false;               // blocks: also time each node's problem (OpSpec::nodes)
  std::vector<std::string> case_ids;// exact cases (override op/backend/dtype/size)
  int repetitions = 10;             // Google Benchmark repetitions per round
  double min_time_s = 0.005;        // device time per repetition (sets its launch count)
  double max_time_s = 2.0;          // time cap per case (rounds stop here)
  double noise_target = 0.01;       // stop adding rounds once cv over repetitions is under this
  int max_rounds = 4;
  int warmup = 3;                   // untimed launches per buffer set first
  CachePolicy cache = CachePolicy::cold;
  std::string ceilings_path;        // `dnnblocks roofline --out` file; "" = measure quick probes now
  // Testing aid for the gate: add a real device-side delay of `slowdown_percent` of the
  // case's own launch time inside the timed region of cases matching the glob.
  std::string slowdown_glob;
  double slowdown_percent = 0;
  bool progress = false;            // a progress line on stderr
};

struct ClockSample {
  double sm_mhz = 0, sm_max_mhz = 0;
  bool throttled = false;  // power or thermal slowdown reported by the driver
};

struct BenchResult {
  CaseId id;
  // A node case of `bench --nodes`: the block case it belongs to and the names of its nodes
  // that have this problem (a graph's two residual adds share one); empty otherwise.
  std::string block;
  std::vector<std::string> nodes;
  std::string device;            // "cuda:0"; "" when absent
  std::string device_name;
  StatusCode status = StatusCode::ok;
  std::string reason;
  std::string timer;             // cuda-events, opencl-profiling, host-clock
  CachePolicy cache = CachePolicy::cold;
  int rotation_sets = 1;
  double working_set_bytes = 0, cache_bytes = 0;
  int iterations = 0;            // launches per repetition
  std::vector<double> repetition_times_s;
  double median_s = 0, min_s = 0, cv = 0;
  bool noise_target_met = false;
  double bytes = 0, flops = 0;   // per launch
  std::string compute_unit;
  std::optional<double> batched_s;  // tiny cases: per-launch time of back-to-back launches
  std::vector<ClockSample> clocks;  // one per repetition, when the device reports clocks
  std::vector<std::string> flags;
  std::string benchmark_name;    // Google Benchmark's run name

  double bytes_per_s() const { return median_s > 0 ? bytes / median_s : 0; }
  double flops_per_s() const { return median_s > 0 ? flops / median_s : 0; }
};

struct BenchRun {
  std::vector<BenchResult> results;
  std::map<std::string, DeviceCeilings> ceilings;  // per device used
  nlohmann::json google_benchmark;                 // {"context":..., "benchmarks":[...]}
};

// Calls `on_result` as each case finishes, with the ceilings of its device (progress lines). bad_input for an unknown
// op/backend/dtype/device/case or a malformed size or ceilings file.
// (result, its device's ceilings or null, cases done including this one, cases planned)
using BenchCallback = std::function<void(const BenchResult&, const DeviceCeilings*, size_t done, size_t total)>;
Result<BenchRun> run_bench(const BenchOptions& options, const BenchCallback& on_result = {});

// The results file (docs/bench-json.md); `command` is the command line that made it.
nlohmann::json bench_file_json(const BenchRun& run, const std::string& command);
// Roofline figures of one result against its device's ceilings (the "roofline" object).
nlohmann::json roofline_json(const BenchResult& r, const DeviceCeilings* ceilings, const DeviceInfo* info);

// A memory-bound figure above the DRAM ceiling is a cache figure: flagged as such (hot
// policy) or as a measurement error (cold policy whose rotation stayed within the cache).
void flag_impossible_figures(const DeviceCeilings* ceilings, BenchResult& r);

// Hooks a device kind registers from devices/ for bench: its clocks (CUDA through NVML) and a
// device-side delay queued on its stream (the --slowdown testing aid). Either may be empty.
struct BenchHooks {
  DeviceKind kind;
  std::function<Result<ClockSample>(DeviceRuntime&)> read_clock;
  std::function<Status(DeviceRuntime&, double seconds)> enqueue_delay;
};
bool register_bench_hooks(BenchHooks hooks);
const BenchHooks* bench_hooks(DeviceKind kind);

// Items of the results' fingerprint that only a backend knows (e.g. "onednn": "2.6.0").
bool register_fingerprint_item(std::string name, std::function<std::string()> value);
nlohmann::json build_fingerprint();  // compiler, flags, commit, and the registered items

}  // namespace dnnb
