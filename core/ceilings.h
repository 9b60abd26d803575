// Measured ceilings of a device: what its memory and arithmetic units reach in practice
// (DRAM copy and read streams, a cache, FMA and tensor-unit throughput per dtype, the cost of
// an empty launch). `dnnblocks roofline` measures and saves them; bench judges every result
// against them (speed-of-light %) and report draws them. Each device kind registers its
// probes from devices/ (they need the device's SDK); theoretical peaks stay in DeviceInfo.
//
// Probe names are fixed so that bench and report can ask for them:
//   empty_launch_s            an empty kernel launch on the device (what a tiny op cannot go under)
//   graph_launch_s            an empty kernel as a node of a CUDA graph (CUDA: the launch floor in graphs)
//   host_launch_s             the host's time to launch one (GPUs; the host's figure, not the device's)
//   dram_copy_bytes_per_s     device-to-device copy, bytes read + written, working set >> caches
//   dram_read_bytes_per_s     read-only stream (a reduction the compiler cannot drop)
//   cache_read_bytes_per_s    read stream over a working set that fits the last-level cache
//   <dtype>_<unit>_flops_per_s  arithmetic, 2 FLOP per FMA: f32_fma, f16_fma, bf16_dot (AVX512_BF16),
//                             bf16_amx, f16_tensor, bf16_tensor (CUDA: wgmma on compute capability 9.0, else mma.sync)
// docs/roofline.md says how each is measured and how repeatable it is.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.h"
#include "core/status.h"

namespace dnnb {

struct ProbeOptions {
  bool quick = false;  // fewer repetitions and smaller buffers (tests, CI): seconds, not a minute
};

struct ProbeResult {
  double value = 0;       // median over samples, in the unit the probe's name ends with
  double spread = 0;      // (max - min) / median over the samples
  int samples = 0;
  std::string how;        // one line: buffer size, threads, kernel, e.g. "cudaMemcpyAsync 2 GiB, 20 reps"
  double best = 0;        // the best sample (highest rate, shortest time; STREAM reports this);
                          // 0 when unknown (files written before it was kept)
};

struct CeilingProbe {
  DeviceKind kind;
  std::string name;
  std::function<Result<ProbeResult>(DeviceRuntime&, const ProbeOptions&)> measure;
};
bool register_ceiling_probe(CeilingProbe probe);
// Names of the probes registered for a kind, in registration order.
std::vector<std::string> ceiling_probe_names(DeviceKind kind);
// What every probe returns: the median of its samples (each one a rate or a time in the
// probe's unit), the best sample, spread = (max - min) / median; error when empty or not all
// finite > 0.
enum class SampleKind { rate, time };  // which end is best: the highest rate, the shortest time
Result<ProbeResult> probe_result_from_samples(std::vector<double> samples, std::string how,
                                              SampleKind kind = SampleKind::rate);

// Timing helpers shared by the GPU probes (CUDA and OpenCL), on the device's own timer.
struct ProbePlan {
  int warmups;
  int samples;
  double sample_s;  // target length of one sample
};
// Device milliseconds of each of plan.samples runs of `launch`, after plan.warmups untimed; a
// sample the timer calls late (DeviceTimer::late) is taken again, up to plan.samples times.
Result<std::vector<double>> time_probe_samples(DeviceRuntime& device, const ProbePlan& plan,
                                               const std::function<Status()>& launch);
// The count for which launch(count) takes about target_s (counts grow 4x until measurable;
// one untimed launch first, which pays for loading or JIT-compiling the kernel).
Result<long long> calibrate_probe_count(DeviceRuntime& device, double target_s, int max_rounds,
                                        const std::function<Status(long long)>& launch);
// Each sample's `amount` per second (bytes or FLOP over its milliseconds), as a ProbeResult.
Result<ProbeResult> probe_rates(std::vector<double> ms, double amount, std::string how);

struct DeviceCeilings {
  std::string device;                           // "cuda:0"
  std::string name;                             // the device's name, for reports
  std::map<std::string, ProbeResult> measured;  // probe name -> result
  std::map<std::string, std::string> failed;    // probe name -> why it could not be measured
  double seconds = 0;                           // how long measuring took
  std::string date;                             // ISO 8601, UTC
  std::string source;                           // "measured in this run" or the file it came from

  // The DRAM ceiling a memory-bound kernel is judged against: the larger of the copy and
  // read streams (0 when neither was measured).
  double bandwidth_bytes_per_s() const;
  // The arithmetic ceiling of one unit, e.g. "f32_fma" (0 when not measured).
  double flops_per_s(const std::string& unit) const;
  double value(const std::string& probe) const;  // 0 when absent
  nlohmann::json to_json() const;
  static Result<DeviceCeilings> from_json(const nlohmann::json& j, const std::string& source);
};

// Runs every probe registered for the device's kind.
DeviceCeilings measure_ceilings(DeviceRuntime& device, const ProbeOptions& options);
// Reads a file written by `dnnblocks roofline --out`: {"schema_version":1,"devices":{id: ceilings}}.
// bad_input naming the file and the key on anything malformed.
Result<std::map<std::string, DeviceCeilings>> load_ceilings(const std::string& path);

}  // namespace dnnb
