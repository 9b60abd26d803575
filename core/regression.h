// Regression gating: two results files (bench, check, or a baseline holding both) matched case
// by case; timings judged with a Mann-Whitney U test and a Hodges-Lehmann interval over the
// repetitions, so that noise does not fail a build, and conformance verdicts compared so that
// a case that passed and now fails always does. `dnnblocks compare` and ci/gate.sh use it;
// docs/gating.md explains the rule and its measured error rates.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace dnnb {

// ---------------------------------------------------------------------------------------------
// Statistics (pure functions, checked against scipy in tests/test_regression.cpp)

// Which way the alternative hypothesis points: `greater` means x tends to be larger than y.
enum class Alternative { two_sided, greater, less };

struct MannWhitneyU {
  double u1 = 0;        // U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties counting 1/2
  double p_value = 1;
  bool exact = false;   // exact null distribution (small samples, no ties) or the normal approximation
};

// scipy.stats.mannwhitneyu(x, y, alternative, method="auto", use_continuity=True): exact when
// either sample has at most 8 values and there are no ties, else the normal approximation
// with the tie correction and the continuity correction. Google Benchmark's compare.py uses
// the same test (two-sided). Needs at least one value in each sample.
MannWhitneyU mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y,
                            Alternative alternative = Alternative::two_sided);

// P(U <= u) under the null hypothesis for samples of n and m values without ties.
double mann_whitney_exact_cdf(int n, int m, double u);

// The Hodges-Lehmann estimate of how much y is shifted from x (median of all pairwise
// differences y_j - x_i) and its distribution-free confidence interval (the order statistics
// of the pairwise differences that the U test's critical value picks). `bounded` is false
// when the samples are too small for that confidence: the interval is then infinite.
struct ShiftInterval {
  double estimate = 0;
  double lower = 0, upper = 0;
  bool bounded = false;
};
ShiftInterval hodges_lehmann_shift(const std::vector<double>& x, const std::vector<double>& y, double confidence);

// Standard deviation over mean (sample standard deviation, n - 1); 0 with fewer than 2 values.
double coefficient_of_variation(const std::vector<double>& values);
// The same measured robustly: 1.4826 x median absolute deviation / median (equal to the cv for
// normal noise; a few preempted repetitions do not inflate it). The cv below 3 values.
double robust_coefficient_of_variation(const std::vector<double>& values);

// ---------------------------------------------------------------------------------------------
// Results files (docs/bench-json.md; a baseline wraps a bench and a check file of one device
// model: {"schema_version":1,"kind":"baseline","device_model":"NVIDIA H200","bench":{...},"check":{...}})

struct BenchEntry {
  std::string case_id;          // as written
  std::string match_key;        // case id without the device index (see match_key_of_case_id)
  std::string device, device_name;
  std::string status;           // ok | skipped | unsupported | error | bad_input
  std::string reason;
  std::vector<double> repetition_times_s;
  double median_s = 0;
  double cv = 0;                // from the file; computed from the repetitions when absent
  double robust_cv = 0;         // robust_coefficient_of_variation of the repetitions (cv below 3)
};

struct CheckEntry {
  std::string case_id, match_key, device;
  std::string verdict;          // PASS FAIL XFAIL SKIP UNSUPPORTED BAD_INPUT ERROR
  std::string reason;
};

struct ResultsFile {
  std::string path;
  std::string kind;             // bench | check | baseline
  std::string device_model;     // a baseline's device_model; "" otherwise
  std::optional<std::vector<BenchEntry>> bench;
  std::optional<std::vector<CheckEntry>> check;
};

// The device index is left out of the match key, so that a run on cuda:1 compares with a
// baseline recorded on cuda:0 of the same model:
//   "softmax:bf16:16384x8192@cuda/smem:1" -> "softmax:bf16:16384x8192@cuda/smem"
std::string match_key_of_case_id(const std::string& case_id);

// bad_input naming the file and what is wrong (unreadable, not JSON, unknown kind or schema,
// a result without its keys, non-positive times, one case twice).
Result<ResultsFile> load_results_file(const std::string& path);
Result<ResultsFile> parse_results_json(const nlohmann::json& doc, const std::string& path);

// Leaves out the cases of alternative implementations (a case id whose backend names a variant,
// "...@cuda/smem:0"): compare judges the defaults unless given `--variants all`.
void drop_alternative_cases(ResultsFile& file);

// Adds a rerun (a bench file: the gate's reruns of ambiguous cases, each in a fresh process)
// to `candidate`: where both ran, the rerun's repetitions join the candidate's (median and
// noise recomputed over all, so a process that was slow alone is diluted and a slowdown that
// every process shows is measured more tightly); otherwise the rerun's result replaces the
// candidate's. bad_input when a rerun case is not in `candidate`.
// With `replace`, the rerun's results replace the candidate's outright (the gate's one
// confirmation run of a case found slower: does a fresh process show it too?).
Status apply_rerun(ResultsFile& candidate, const ResultsFile& rerun, bool replace = false);

// ---------------------------------------------------------------------------------------------
// Comparison

struct CompareOptions {
  double threshold_pct = 5.0;   // a slowdown smaller than this is never a regression
  double noise_multiple = 3.0;  // ... nor one smaller than this many times the runs' noise
  // The noise of a run: its robust cv (default), or its plain cv, which one preempted
  // repetition can make many times larger than the spread of all the others.
  bool robust_noise = true;
  double alpha = 0.05;          // significance of the U test; the interval is at 1 - alpha
  bool allow_device_mismatch = false;
};

enum class TimingVerdict {
  same,         // the interval's upper end is within the threshold: not slower by more than it
  faster,       // faster by more than the threshold, significantly
  regression,   // slower by more than the threshold, significantly
  ambiguous,    // neither: too noisy or too few repetitions to tell, or near the threshold
  now_failing,  // ran in BASE, error or bad_input in CANDIDATE: a regression too
};
const char* to_string(TimingVerdict verdict);

struct TimingComparison {
  std::string match_key, base_case_id, candidate_case_id;
  std::string device_name;
  double base_median_s = 0, candidate_median_s = 0;
  // Relative change of the candidate's time, from the Hodges-Lehmann shift of log times:
  // +0.20 = 20% slower. The interval is unbounded (lower = -inf, upper = +inf) when the
  // samples are too few.
  double change = 0, change_lower = 0, change_upper = 0;
  double p_value = 1;           // two-sided Mann-Whitney U
  int base_repetitions = 0, candidate_repetitions = 0;
  double noise = 0;             // max of the two runs' (robust) cv
  double threshold = 0;         // max(threshold_pct / 100, noise_multiple * noise)
  TimingVerdict verdict = TimingVerdict::same;
  std::string note;             // why, for ambiguous and now_failing
};

struct StatusChange {           // a case measured on one side only, or a check verdict that changed
  std::string case_id;
  std::string base, candidate;  // status or verdict on each side; "" when absent
  std::string reason;           // the candidate's reason
};

struct BenchComparison {
  std::vector<TimingComparison> timings;       // every case measured on both sides, or newly failing
  std::vector<StatusChange> missing;           // in BASE, not in CANDIDATE
  std::vector<StatusChange> added;             // in CANDIDATE, not in BASE
  std::vector<StatusChange> not_measured;      // ok in BASE, skipped or unsupported in CANDIDATE
  std::vector<StatusChange> newly_measured;    // not ok in BASE, ok in CANDIDATE
  int count(TimingVerdict verdict) const;
};

struct CheckComparison {
  int matched = 0;
  std::vector<StatusChange> regressions;       // PASS in BASE; FAIL, ERROR or BAD_INPUT in CANDIDATE
  std::vector<StatusChange> fixed;             // FAIL or ERROR in BASE, PASS in CANDIDATE
  std::vector<StatusChange> changed;           // any other change of verdict
  std::vector<StatusChange> missing, added;
};

struct Comparison {
  std::string base_path, candidate_path;
  std::string device_models;                   // "NVIDIA H200" (or "A vs B" when allowed to differ)
  std::optional<BenchComparison> bench;
  std::optional<CheckComparison> check;

  int regressions() const;                     // timing regressions + now failing + conformance regressions
  int ambiguous() const;
  // 0 clean, 1 a regression (or an ambiguous case when ambiguous_fails).
  int exit_code(bool ambiguous_fails) const;
  std::string verdict_line(bool ambiguous_fails) const;  // "PASS: ..." / "FAIL: ..."
};

// bad_input when the files cannot be compared: no kind in common (bench with check), or the
// device models differ (unless allowed), naming both files and the reason.
Result<Comparison> compare_results(const ResultsFile& base, const ResultsFile& candidate, const CompareOptions& options);
// One timed case, exposed for tests.
TimingComparison compare_timing(const BenchEntry& base, const BenchEntry& candidate, const CompareOptions& options);

}  // namespace dnnb
