// What `dnnblocks report` draws: bench results files (docs/bench-json.md, schema 1) read and
// merged into one model. The files are untrusted input: anything malformed is bad_input
// naming the file and the key; nothing is dropped silently (duplicates and replaced devices
// become notes that the page and the summary print).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace dnnb::report {

struct CeilingValue {
  double value = 0;   // in the unit the probe's name ends with
  double spread = 0;  // (max - min) / median over the samples
  int samples = 0;
  std::string how;
};

// One entry of `devices`: the capability record (`dnnblocks devices --json`) and the ceilings.
struct DeviceRecord {
  std::string id;        // "cuda:0"
  std::string kind;      // cpu | cuda | opencl
  std::string name;      // as the driver reports it
  std::string summary;   // capabilities.summary, or the scalar capabilities joined
  std::string file;      // the results file it came from
  // Theoretical peaks (info.peaks): 0 / absent where the device does not say.
  double theoretical_bandwidth = 0;
  std::map<std::string, double> theoretical_flops;        // dtype -> FLOP/s
  std::map<std::string, std::string> theoretical_formula;  // key of flops_per_s or "memory_bandwidth_bytes_per_s"
  // Measured ceilings (ceilings.measured / failed).
  std::map<std::string, CeilingValue> measured;
  std::map<std::string, std::string> failed;
  std::string ceilings_source, ceilings_date;

  double measured_value(const std::string& probe) const;  // 0 when absent
  // The DRAM ceiling bench judges memory-bound kernels against: max(copy, read), 0 if neither.
  double measured_bandwidth() const;
};

// What a result is judged against (report_judge.cpp; docs/report.md, "How a case is judged"),
// in the headline's order.
enum class Bound { dram, cache, compute, launch, oracle, none };
const char* bound_name(Bound bound);  // "DRAM", "cache", "compute", "launch", "oracle", "none"

struct Judgment {
  Bound bound = Bound::none;
  // 100 x the time at the binding ceiling / the median time. Absent for the oracle and for a
  // result whose device has no memory ceiling.
  std::optional<double> percent;
  double ceiling = 0;        // the binding ceiling: B/s (DRAM, cache), FLOP/s (compute), s (launch)
  // The time at the roofline: max(bytes / memory ceiling, FLOP / compute ceiling, the empty
  // launch), in seconds; 0 without a percent. FLOP / roof_s is the roofline bound in FLOP/s,
  // min(compute ceiling, intensity x bandwidth), where the launch does not bind.
  double roof_s = 0;
  double spread = 0;         // its probe's (max - min) / median; 0 when not measured
  bool theoretical = false;  // compute judged against a theoretical peak (nothing measured)
  std::string note;          // why the figure is above 100%, else ""
  // "cache 8.69 TB/s", "launch 1.34 µs", "compute 63.1 TFLOP/s (theoretical)", "oracle", "".
  std::string roof() const;
  // "12.3% of roofline (cache 8.69 TB/s)", "the oracle: not ranked", "" (for chart hovers).
  std::string describe() const;
};

struct ResultRecord {
  std::string file;  // the results file it came from
  std::string case_id, op, dtype, shape, params, backend, variant, device, device_name;
  std::string status;  // ok | skipped | unsupported | error | bad_input
  std::string family;  // the op's family ("1", "blocks"); "" in files that predate it
  // Blocks: the tokens one launch processes (0: not a block). Node cases of `bench --nodes`:
  // the block's case id and the names of the nodes with this problem.
  double tokens = 0;
  std::string block;
  std::vector<std::string> nodes;
  std::string reason;
  std::string timer, cache_policy, compute_unit;
  // Timings: present (non-zero) only for ok results.
  double median_s = 0, min_s = 0, cv = 0, noise_target = 0;
  std::optional<bool> noise_target_met;
  int repetitions = 0, iterations = 0, samples = 0;
  double bytes = 0, flops = 0, bytes_per_s = 0, flops_per_s = 0, intensity = 0;
  double working_set_bytes = 0, cache_bytes = 0;
  // The file's "roofline" object as bench wrote it: against DRAM and compute only. The report
  // shows `judged` instead; the compute ceiling and pct_of_copy are taken from here.
  std::optional<double> bench_sol_percent, pct_of_copy;
  double roof_bandwidth = 0, roof_compute = 0, roof_bound_flops = 0;
  std::string compute_source, bound_by;
  // launch / clock (GPU)
  std::optional<double> empty_launch_s, x_empty, batched_s;
  std::optional<double> sm_mhz_median;
  int throttled_repetitions = 0;
  std::vector<std::string> flags;
  // The ceilings of the result's device in its own file, copied at load so that a later file
  // describing the device differently does not rejudge it: DRAM (the larger of copy and read),
  // the cache read stream, the empty launch, the compute unit's ceiling. value 0 where absent.
  CeilingValue own_dram, own_cache, own_launch, own_compute;
  Judgment judged;  // set by judge_results

  bool ok() const { return status == "ok"; }
  // The float64 reference is the oracle the others are checked against, not a contender: it
  // is listed but never ranked against the roofline.
  bool oracle() const { return backend == "reference"; }
  std::string problem() const;        // op:dtype:shape[:params], the same problem on every backend
  std::string backend_label() const;  // backend[/variant]
  // A point on the log-log roofline needs a positive intensity and FLOP rate.
  bool plottable() const { return ok() && intensity > 0 && flops_per_s > 0; }
  // Flags as written plus what the numbers say (noise target missed, throttled repetitions,
  // a figure above its ceiling).
  std::vector<std::string> warnings() const;
};

struct FingerprintRecord {
  std::string file;
  std::vector<std::pair<std::string, std::string>> fields;  // in the order of the file, as text
};

struct ReportModel {
  std::vector<std::string> files;
  std::vector<FingerprintRecord> fingerprints;
  std::map<std::string, DeviceRecord> devices;  // by id
  std::vector<ResultRecord> results;            // input order; a duplicate case id keeps the later one
  std::vector<std::string> notes;               // duplicates, replaced devices: printed, never hidden

  size_t ok_count() const;
  // The device's name: from `devices`, else from a result on it, else the id.
  std::string device_name(const std::string& id) const;
  std::string device_kind(const std::string& id) const;  // from `devices`, else the id's prefix
};

// Reads and merges the files in order. bad_input: "FILE: KEY.PATH: what is wrong".
Result<ReportModel> load_report(const std::vector<std::string>& paths);
// Adds one file's JSON text to the model (the loader's core; tests call it with text).
Status add_report_text(ReportModel& model, const std::string& text, const std::string& file_label);

// Judges every ok result of the model (report_judge.cpp): the memory level its working set
// lives in, the launch floor, the oracle. add_report_text calls it after each file.
void judge_results(ReportModel& model);

// Per backend, in order of first appearance: how many ok results, and per bound the count and
// median % of its ranked results. The verdict of the page and of the summary: DRAM-, cache-,
// compute- and launch-bound cases are never mixed in one median, and the oracle has none.
struct BoundMedian {
  size_t count = 0;
  double median = 0;
};
struct BackendSummary {
  std::string backend;
  size_t ok = 0, not_ok = 0;
  bool oracle = false;
  std::map<Bound, BoundMedian> by_bound;  // ranked results only
};
std::vector<BackendSummary> backend_summaries(const ReportModel& model);

// Physical hardware: a CUDA device and the NVIDIA OpenCL device of the same name are one GPU;
// the CPU and a PoCL device on it are one CPU (PoCL prefixes the CPU's name, e.g.
// "pthread-skylake-avx512-AMD EPYC" for "AMD EPYC": matched by containment).
struct HardwareGroup {
  std::string name;                     // the native device's name
  std::string kind;                     // "GPU", "CPU" or the OpenCL device type
  std::string primary;                  // the native device id whose ceilings the chart draws first
  std::vector<std::string> device_ids;  // primary first
  std::string anchor;                   // html id: "hw-0", "hw-1", ...
};
std::vector<HardwareGroup> hardware_groups(const ReportModel& model);
// Index into `groups` of the group holding the device (groups.size() when none does).
size_t group_of(const std::vector<HardwareGroup>& groups, const std::string& device_id);

}  // namespace dnnb::report
