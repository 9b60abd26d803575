// The conformance engine: plans cases (fixture cases from PyTorch, and fresh random cases
// compared with the reference), runs each implementation on each device, and records every
// cell; nothing stops at the first failure.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare.h"
#include "core/fixtures.h"
#include "core/gguf_weights.h"
#include "core/plan.h"
#include "core/registry.h"

namespace dnnb {

// How much a check covers. smoke: one fixture per op and dtype (seconds); ci: every fixture
// and the random problems sized for a 2-core machine (the default); full: also each op's
// bench problems as random cases (real model sizes) and every alternative implementation.
enum class CheckTier { smoke, ci, full };
const char* to_string(CheckTier tier);
Result<CheckTier> parse_check_tier(const std::string& text);

struct CheckOptions {
  CheckTier tier = CheckTier::ci;
  // Alternatives run with `--variants all`, the full tier, or when --backend names one.
  bool all_variants = false;
  // A case that has not returned after this many seconds is reported TIMEOUT (0: no limit).
  double case_timeout_s = 600;
  std::string op_glob = "*";
  std::string backend;         // "" = all; "cuda", "cuda/variant" or a comma-separated list
  std::string dtype;           // "" = all
  std::string device;          // "" = every device of the backend's kind; "cuda:0"
  std::string case_id;         // exactly one case
  std::string fixtures_dir;    // "" = default_fixtures_dir()
  bool bitwise = false;        // run twice, require identical bits
  bool fixtures = true;        // include fixture cases
  bool random = true;          // include random cases (non-reference backends)
  // One case at a time in plan order; by default each device runs its cases on its own
  // thread, side by side with the other devices.
  bool serial = false;
  // A GGUF file whose tensors the quantised ops take as their weight operand
  // (core/gguf_weights.h): the plan is then those cases only, no fixtures or random problems.
  std::string weights_path;
  std::string weights_tensors;  // comma-separated tensor names; "" = every tensor of the file
};

struct PlannedCase {
  CaseId id;
  const OpSpec* spec = nullptr;
  const Implementation* impl = nullptr;
  DeviceRuntime* device = nullptr;     // null: absent, see skip_reason
  std::string skip_reason;
  const FixtureEntry* fixture = nullptr;
  std::optional<WeightSource> weights;  // a --weights case: this input is the file's tensor
};

struct OutputResult {
  std::string name;
  Tolerance tolerance;
  Metrics ours;
  bool has_torch = false;
  Metrics torch;                  // PyTorch's own error against the golden
  bool within_torch = false;      // passed because no worse than PyTorch
  std::string torch_rule;         // judged by OutputBound::torch_factor: "<= 2 x torch + 1.2e-03"
};

// A quantising op's error on one case (OpSpec::quantizes_input), llama.cpp quantize-stats'
// figures: over the elements where both the input and its decoded value are finite, the RMSE,
// the largest |error|, its median and 95th percentile, and a histogram of |error| in
// `histogram.size()` equal buckets from 0 to max_abs (the last bucket includes max_abs).
struct QuantizeStats {
  int64_t count = 0;       // elements counted
  int64_t nonfinite = 0;   // elements left out: a NaN or Inf input or decoded value
  double rmse = 0, max_abs = 0, median = 0, p95 = 0;
  std::vector<int64_t> histogram;
};
// The stats of `decoded` (f64, contiguous) against `source` (a host tensor of any float dtype,
// contiguous), both of one shape; 10 histogram buckets.
QuantizeStats quantize_stats(const Tensor& decoded, const Tensor& source);
// One line: "rmse 1.2e-03 max 5.0e-03 median 8.1e-04 95% 2.4e-03 hist[0..5.0e-03] 812 ... (n)".
std::string quantize_stats_line(const QuantizeStats& s);

struct CaseResult {
  std::string case_id;
  std::string device;             // "cuda:0" or "" when absent
  std::string source;             // "fixture <path>" or "random seed=<hex>"
  StatusCode status = StatusCode::ok;  // ok = PASS, mismatch/error = FAIL
  std::string reason;
  std::vector<OutputResult> outputs;
  std::optional<QuantizeStats> quantize_stats;  // quantising ops only
  double seconds = 0;
  std::string known_deviation;    // a mismatch the implementation documents (XFAIL)
  bool timed_out = false;         // status error: did not return within --case-timeout

  const char* verdict() const;    // PASS FAIL XFAIL SKIP UNSUPPORTED BAD_INPUT ERROR TIMEOUT
  bool expected_failure() const { return status == StatusCode::mismatch && !known_deviation.empty(); }
  bool failed() const { return (status == StatusCode::mismatch && known_deviation.empty()) || status == StatusCode::error; }
};

struct CheckSummary {
  int passed = 0, failed = 0, expected_failures = 0, skipped = 0, unsupported = 0, bad_input = 0;
  int exit_code() const { return bad_input > 0 ? 2 : failed > 0 ? 1 : 0; }
};

// The cells check runs: options' ops, backends, dtype and device; alternatives too with
// --variants all or the full tier.
PlanFilter check_plan_filter(const CheckOptions& options);
// bad_input for an unknown op/backend/dtype/device, a malformed case id or manifest.
// Loads the fixture manifest into `manifest`; planned cases point into it, so it must
// outlive them.
// With options.weights_path, the plan of plan_weight_check; `skipped_tensors` (optional) gets
// the tensors an op takes no case from.
Result<std::vector<PlannedCase>> plan_check(const CheckOptions& options, FixtureManifest& manifest,
                                            std::vector<SkippedTensor>* skipped_tensors = nullptr);
// The --weights plan (core/check_weights.cpp): every selected implementation but the
// reference's, on each problem that the selected tensors of the file give its op and dtype
// (x random, seeded by the problem); or the one case of options.case_id. bad_input for a file
// the GGUF reader refuses (naming the file), a --tensor name it lacks, an --op selecting no op
// that takes weights, or a case id whose tensor= does not fit the file.
Result<std::vector<PlannedCase>> plan_weight_check(const CheckOptions& options, std::vector<SkippedTensor>* skipped_tensors);
CaseResult run_case(const PlannedCase& planned, const FixtureManifest& manifest, const CheckOptions& options);
// A result naming the planned case (id, device, source) and nothing else yet.
CaseResult result_of(const PlannedCase& planned);
// Shared with bench: random host inputs of a problem (seeded from it), and device storage for
// one input laid out as its TensorSpec says (permuted, padded), returned as the logical view.
Result<std::vector<Tensor>> make_random_inputs(const OpSpec& spec, const Problem& problem, const Signature& sig);
Result<Tensor> make_device_input(DeviceRuntime& device, const TensorSpec& spec);
// The implementation's scratch memory for a problem on `device` (a u8 tensor), or an empty
// tensor when it asks for none.
Result<Tensor> make_workspace(const Implementation& impl, const Problem& problem, DeviceRuntime& device);

// Runs the plan, each device's cases in plan order on their own worker thread (devices side by
// side, unless options.serial), each case watched: a case that
// does not return within options.case_timeout_s is reported TIMEOUT with its repro line and the
// run goes on with the next case on a fresh worker. The stuck worker cannot be stopped: it is
// left running, and `abandoned_case_workers()` counts such workers so that the CLI can end the
// process without waiting for them (a hung GPU kernel ends with the process). A device other
// than the host CPU that timed out is still busy with the stuck kernel, so its later cases are
// reported SKIP with that reason instead of each waiting out the limit.
// `on_result` sees each result as it is made (progress, printing), one call at a time; results
// come back in plan order.
std::vector<CaseResult> run_plan(const std::vector<PlannedCase>& plan, const FixtureManifest& manifest,
                                 const CheckOptions& options,
                                 const std::function<void(size_t index, const CaseResult&)>& on_result = {});
int abandoned_case_workers();

CheckSummary summarize(const std::vector<CaseResult>& results);

nlohmann::json results_to_json(const std::vector<CaseResult>& results);
std::string results_to_junit(const std::vector<CaseResult>& results);
// Text escaped for an XML attribute or element (JUnit reports of check and compare).
std::string xml_escape(const std::string& s);
// The shell command that reruns one case.
std::string repro_command(const CaseResult& r, const CheckOptions& options);

}  // namespace dnnb
