// The regression gate's promises: the U test gives scipy's p-values (exact and normal paths),
// a run compared with another run of the same build passes, a case made 20% slower fails, a
// noisy case that did not change is not called a regression, a case that passed and now fails
// always fails, missing and new cases are listed, and unreadable, malformed or mismatched
// files are bad input (exit 2) naming the file and the reason.
// Files under tests/compare/data/ come from tests/compare/make_data.py (docs/bench-json.md).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/regression.h"

namespace dnnb {
namespace {

const std::string kData = std::string(DNNB_SOURCE_DIR) + "/tests/compare/data/";

ResultsFile load(const std::string& name) {
  auto f = load_results_file(kData + name);
  EXPECT_TRUE(f.is_ok()) << f.status().message;
  return f.is_ok() ? *f : ResultsFile{};
}

Comparison compare(const std::string& base, const std::string& candidate, CompareOptions options = {}) {
  auto c = compare_results(load(base), load(candidate), options);
  EXPECT_TRUE(c.is_ok()) << c.status().message;
  return c.is_ok() ? *c : Comparison{};
}

const TimingComparison* find_timing(const Comparison& c, const std::string& case_id) {
  for (const auto& t : c.bench->timings)
    if (t.candidate_case_id == case_id) return &t;
  return nullptr;
}

void set_noise(BenchEntry& e) {
  e.cv = coefficient_of_variation(e.repetition_times_s);
  e.robust_cv = robust_coefficient_of_variation(e.repetition_times_s);
}

// --- statistics against scipy 1.11 (scipy.stats.mannwhitneyu, method="auto")

TEST(MannWhitneyU, ExactPathMatchesScipyDocumentation) {
  // The example of scipy's mannwhitneyu documentation: U1 = 17, p = 0.1111111111111111.
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const MannWhitneyU r = mann_whitney_u(males, females);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 17);
  EXPECT_NEAR(r.p_value, 0.1111111111111111, 1e-15);
  // No overlap, 8 vs 5 values: one arrangement of C(13, 5) = 1287 in each tail.
  const std::vector<double> x = {0.95, 1.01, 0.99, 1.02, 0.98, 1.00, 1.03, 0.97}, y = {1.05, 1.08, 1.04, 1.10, 1.06};
  EXPECT_NEAR(mann_whitney_u(x, y, Alternative::two_sided).p_value, 2.0 / 1287, 1e-15);
  EXPECT_NEAR(mann_whitney_u(x, y, Alternative::less).p_value, 1.0 / 1287, 1e-15);
  EXPECT_DOUBLE_EQ(mann_whitney_u(x, y, Alternative::greater).p_value, 1.0);
}

TEST(MannWhitneyU, NormalApproximationMatchesScipy) {
  // No ties, 12 and 15 values: asymptotic path with the continuity correction.
  const std::vector<double> x = {9.7441, 10.5114, 9.7739, 9.6849, 9.07, 9.7867, 11.1119, 10.4241, 11.0369, 10.2489, 10.3948, 10.1853};
  const std::vector<double> y = {9.1339, 11.6553, 11.3064, 11.2988, 9.1086, 9.0561, 9.9104, 10.3318,
                                 11.1054, 10.7541, 11.321, 10.1578, 11.1087, 11.1942, 10.1389};
  MannWhitneyU r = mann_whitney_u(x, y, Alternative::two_sided);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 64);
  EXPECT_NEAR(r.p_value, 0.2133992543763627, 1e-12);
  EXPECT_NEAR(mann_whitney_u(x, y, Alternative::greater).p_value, 0.9020061594917087, 1e-12);
  EXPECT_NEAR(mann_whitney_u(x, y, Alternative::less).p_value, 0.10669962718818135, 1e-12);
  // The documentation's example forced onto the normal path (scipy: 0.11134688653314041) is the
  // same formula; ties (below) take it automatically, with the tie correction.
}

TEST(MannWhitneyU, TiesUseTheCorrectedNormalApproximation) {
  const std::vector<double> x = {1, 2, 2, 3, 4, 5, 5, 6, 7, 8}, y = {3, 4, 5, 5, 6, 7, 8, 8, 9, 10};
  MannWhitneyU r = mann_whitney_u(x, y);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u1, 25);
  EXPECT_NEAR(r.p_value, 0.062125620739433944, 1e-12);
  EXPECT_NEAR(mann_whitney_u(x, y, Alternative::less).p_value, 0.031062810369716972, 1e-12);
  EXPECT_NEAR(mann_whitney_u(x, y, Alternative::greater).p_value, 0.9739034009834279, 1e-12);
  // Every value equal: no evidence either way.
  EXPECT_DOUBLE_EQ(mann_whitney_u({1, 1, 1}, {1, 1, 1}).p_value, 1.0);
}

TEST(MannWhitneyU, ExactNullDistribution) {
  // n = m = 5: 252 arrangements; U <= 2 in 4 of them (U = 0, 1, 2, 2).
  EXPECT_NEAR(mann_whitney_exact_cdf(5, 5, 2), 4.0 / 252, 1e-15);
  EXPECT_NEAR(mann_whitney_exact_cdf(5, 5, 12.5), 0.5, 1e-15);  // symmetric about nm / 2
  EXPECT_DOUBLE_EQ(mann_whitney_exact_cdf(5, 5, 25), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_exact_cdf(5, 5, -1), 0.0);
  // Large sizes stay a distribution: P(U <= nm/2) = 1/2 + P(U = nm/2)/2 exceeds 1/2 slightly.
  const double half = mann_whitney_exact_cdf(40, 40, 800);
  EXPECT_GT(half, 0.5);
  EXPECT_LT(half, 0.52);
}

TEST(HodgesLehmann, EstimateAndInterval) {
  // Differences {1,2,2,3,3,3,4,4,5}: median 3. n = m = 3 is too few for 95% (P(U = 0) = 1/20),
  // and at 80% C = 2 (P(U <= 1) = 2/20): [D_2, D_8] = [2, 4].
  ShiftInterval s = hodges_lehmann_shift({1, 2, 3}, {4, 5, 6}, 0.95);
  EXPECT_DOUBLE_EQ(s.estimate, 3);
  EXPECT_FALSE(s.bounded);
  s = hodges_lehmann_shift({1, 2, 3}, {4, 5, 6}, 0.80);
  EXPECT_TRUE(s.bounded);
  EXPECT_DOUBLE_EQ(s.lower, 2);
  EXPECT_DOUBLE_EQ(s.upper, 4);
  // Large samples (normal critical value): the interval covers the true shift and is narrow.
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> x, y;
  for (int i = 0; i < 300; ++i) x.push_back(noise(rng)), y.push_back(2 + noise(rng));
  s = hodges_lehmann_shift(x, y, 0.95);
  EXPECT_TRUE(s.bounded);
  EXPECT_LT(s.lower, 2);
  EXPECT_GT(s.upper, 2);
  EXPECT_LT(s.upper - s.lower, 0.5);
}

TEST(Regression, CoefficientOfVariation) {
  EXPECT_NEAR(coefficient_of_variation({1, 2, 3}), 0.5, 1e-15);
  EXPECT_DOUBLE_EQ(coefficient_of_variation({4}), 0);
  // Median 2, absolute deviations {1, 0, 1}: MAD 1.
  EXPECT_NEAR(robust_coefficient_of_variation({1, 2, 3}), 1.4826 / 2, 1e-15);
  // Normal noise: both measure the same spread.
  std::mt19937_64 rng(1);
  std::normal_distribution<double> noise(1, 0.02);
  std::vector<double> v;
  for (int i = 0; i < 4000; ++i) v.push_back(noise(rng));
  EXPECT_NEAR(robust_coefficient_of_variation(v), coefficient_of_variation(v), 0.002);
  // One preempted repetition: the cv jumps, the robust cv does not.
  std::vector<double> preempted = {1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01, 0.99, 12.0};
  EXPECT_GT(coefficient_of_variation(preempted), 1.0);
  EXPECT_LT(robust_coefficient_of_variation(preempted), 0.02);
}

TEST(Regression, OnePreemptedRepetitionDoesNotHideAClearSlowdown) {
  // 80% slower, every repetition; one base repetition preempted (12x). The cv (> 100%) would
  // lift the threshold over 300%; the robust noise keeps it at 5%.
  BenchEntry a, b;
  a.status = b.status = "ok";
  a.repetition_times_s = {1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01, 0.99, 12.0};
  for (double t : {1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00}) b.repetition_times_s.push_back(1.8 * t);
  set_noise(a);
  set_noise(b);
  EXPECT_EQ(compare_timing(a, b, {}).verdict, TimingVerdict::regression);
  CompareOptions plain_cv;
  plain_cv.robust_noise = false;
  EXPECT_EQ(compare_timing(a, b, plain_cv).verdict, TimingVerdict::same);
}

// --- the gate on results files

TEST(Regression, RunComparedWithItselfAndWithAnotherRunOfTheSameBuildPasses) {
  for (const char* candidate : {"bench-base.json", "bench-same-build.json"}) {
    Comparison c = compare("bench-base.json", candidate);
    ASSERT_TRUE(c.bench);
    EXPECT_EQ(c.exit_code(true), 0) << candidate << ": " << c.verdict_line(true);
    EXPECT_EQ(c.bench->count(TimingVerdict::same), 8) << candidate;
    EXPECT_TRUE(c.bench->missing.empty() && c.bench->added.empty());
    EXPECT_EQ(c.device_models, "Test CPU (16 cores)");
  }
}

TEST(Regression, TwentyPercentSlowerOnOneCaseFails) {
  Comparison c = compare("bench-base.json", "bench-softmax-20pct-slower.json");
  EXPECT_EQ(c.exit_code(false), 1);
  EXPECT_EQ(c.regressions(), 1);
  const TimingComparison* t = find_timing(c, "softmax:f32:64x8192@avx512:0");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->verdict, TimingVerdict::regression);
  EXPECT_NEAR(t->change, 0.20, 0.03);
  EXPECT_LT(t->change_lower, 0.20);
  EXPECT_GT(t->change_upper, 0.20);
  EXPECT_LT(t->p_value, 1e-3);
  EXPECT_NE(c.verdict_line(false).find("FAIL"), std::string::npos);
  // The same slowdown on the other side is an improvement, not a failure.
  Comparison back = compare("bench-softmax-20pct-slower.json", "bench-base.json");
  EXPECT_EQ(back.exit_code(true), 0);
  EXPECT_EQ(find_timing(back, "softmax:f32:64x8192@avx512:0")->verdict, TimingVerdict::faster);
}

TEST(Regression, NoisyButSameIsNotARegression) {
  // cv 8% on both sides: the threshold rises to 3 x the noise, and no case of two draws of
  // the same distribution is called slower.
  Comparison c = compare("bench-noisy-a.json", "bench-noisy-b.json");
  EXPECT_EQ(c.bench->count(TimingVerdict::regression), 0) << c.verdict_line(false);
  EXPECT_EQ(c.exit_code(false), 0);
  for (const auto& t : c.bench->timings) EXPECT_GE(t.threshold, 3 * t.noise - 1e-12) << t.candidate_case_id;
  // And on many fresh draws: at most the test's alpha of them flagged at all.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.08);
  int flagged = 0;
  const int trials = 400;
  for (int i = 0; i < trials; ++i) {
    BenchEntry a, b;
    a.status = b.status = "ok";
    for (int r = 0; r < 10; ++r) {
      a.repetition_times_s.push_back(1e-3 * std::exp(noise(rng)));
      b.repetition_times_s.push_back(1e-3 * std::exp(noise(rng)));
    }
    set_noise(a);
    set_noise(b);
    const TimingComparison t = compare_timing(a, b, {});
    EXPECT_NE(t.verdict, TimingVerdict::regression);
    flagged += t.verdict != TimingVerdict::same && t.verdict != TimingVerdict::faster;
  }
  EXPECT_LE(flagged, trials / 20);
}

TEST(Regression, SlowdownAtTheThresholdIsFlaggedNeverPassedAsSame) {
  // A real 6% slowdown with 1% noise and 10 repetitions: a regression or, near the threshold,
  // ambiguous (which the gate reruns); never "same".
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.01);
  for (int i = 0; i < 200; ++i) {
    BenchEntry a, b;
    a.status = b.status = "ok";
    for (int r = 0; r < 10; ++r) {
      a.repetition_times_s.push_back(1e-3 * std::exp(noise(rng)));
      b.repetition_times_s.push_back(1.06e-3 * std::exp(noise(rng)));
    }
    set_noise(a);
    set_noise(b);
    const TimingComparison t = compare_timing(a, b, {});
    EXPECT_TRUE(t.verdict == TimingVerdict::regression || t.verdict == TimingVerdict::ambiguous) << to_string(t.verdict);
  }
}

TEST(Regression, TooFewRepetitionsIsAmbiguousNotSame) {
  BenchEntry a, b;
  a.status = b.status = "ok";
  a.repetition_times_s = {1e-3, 1.01e-3};
  b.repetition_times_s = {1e-3, 1.01e-3};
  const TimingComparison t = compare_timing(a, b, {});
  EXPECT_EQ(t.verdict, TimingVerdict::ambiguous);
  EXPECT_NE(t.note.find("too few repetitions"), std::string::npos) << t.note;
}

TEST(Regression, ConformanceRegressionFailsAndChangesAreListed) {
  Comparison c = compare("check-base.json", "check-softmax-fails.json");
  ASSERT_TRUE(c.check);
  EXPECT_FALSE(c.bench);
  EXPECT_EQ(c.exit_code(false), 1);
  ASSERT_EQ(c.check->regressions.size(), 1u);
  EXPECT_EQ(c.check->regressions[0].case_id, "softmax:f32:64x8192@avx512:0");
  EXPECT_EQ(c.check->regressions[0].base, "PASS");
  EXPECT_EQ(c.check->regressions[0].candidate, "FAIL");
  ASSERT_EQ(c.check->fixed.size(), 1u);
  EXPECT_EQ(c.check->fixed[0].case_id, "gelu:f32:1x4096@avx512:0");
  ASSERT_EQ(c.check->missing.size(), 1u);
  EXPECT_EQ(c.check->missing[0].case_id, "relu:f32:64x8192@avx512:0");
  ASSERT_EQ(c.check->added.size(), 1u);
  EXPECT_EQ(c.check->added[0].case_id, "silu:f32:64x8192@avx512:0");
  // Thresholds do not excuse a conformance regression.
  CompareOptions lax;
  lax.threshold_pct = 1000;
  EXPECT_EQ(compare("check-base.json", "check-softmax-fails.json", lax).exit_code(false), 1);
}

TEST(Regression, MissingAndNewBenchCasesAreListedNotFailed) {
  Comparison c = compare("bench-base.json", "bench-missing-and-new.json");
  EXPECT_EQ(c.exit_code(false), 0) << c.verdict_line(false);
  ASSERT_EQ(c.bench->missing.size(), 1u);
  EXPECT_EQ(c.bench->missing[0].case_id, "gelu:f32:64x8192@avx512:0");
  ASSERT_EQ(c.bench->added.size(), 1u);
  EXPECT_EQ(c.bench->added[0].case_id, "silu:f32:64x8192@avx512:0");
  EXPECT_NE(c.verdict_line(false).find("1 missing, 1 new"), std::string::npos) << c.verdict_line(false);
}

TEST(Regression, BaselineOnEitherSideAndDeviceIndexIgnored) {
  Comparison c = compare("baseline.json", "bench-softmax-20pct-slower.json");
  EXPECT_TRUE(c.bench);
  EXPECT_FALSE(c.check);  // the candidate has no check results
  EXPECT_EQ(c.exit_code(false), 1);
  c = compare("check-softmax-fails.json", "baseline.json");
  EXPECT_TRUE(c.check);
  EXPECT_FALSE(c.bench);
  c = compare("baseline.json", "baseline.json");
  EXPECT_TRUE(c.bench && c.check);
  EXPECT_EQ(c.exit_code(true), 0);
  // cpu:1 of the same model against a baseline taken on cpu:0.
  c = compare("baseline.json", "bench-device-index-1.json");
  EXPECT_EQ(c.bench->count(TimingVerdict::same), 8) << c.verdict_line(true);
  EXPECT_EQ(match_key_of_case_id("softmax:bf16:16384x8192@cuda/smem:1"), "softmax:bf16:16384x8192@cuda/smem");
  EXPECT_EQ(match_key_of_case_id("softmax:f32:7x33:fixture=m,mask=7x33@opencl/local:0.1"), "softmax:f32:7x33:fixture=m,mask=7x33@opencl/local");
  EXPECT_EQ(match_key_of_case_id("relu:f32:4x4@reference"), "relu:f32:4x4@reference");
}

TEST(Regression, RerunsJoinTheCandidatesRepetitionsAndConfirmationsReplace) {
  // One repetition cannot bound the change (ambiguous); ten more from a rerun of the same
  // build can (same).
  ResultsFile base = load("bench-base.json");
  ResultsFile candidate = load("bench-same-build.json");
  const std::string victim = "softmax:f32:64x8192@avx512:0";
  auto only_victim = [&](ResultsFile f) {
    f.bench->erase(std::remove_if(f.bench->begin(), f.bench->end(), [&](const BenchEntry& e) { return e.case_id != victim; }),
                   f.bench->end());
    return f;
  };
  for (auto& e : *candidate.bench)
    if (e.case_id == victim) e.repetition_times_s.resize(1);
  auto before = compare_results(base, candidate, {});
  ASSERT_TRUE(before.is_ok());
  EXPECT_EQ(before->ambiguous(), 1);
  ASSERT_TRUE(apply_rerun(candidate, only_victim(load("bench-noisy-a.json"))).is_ok());  // noisy, but the same speed
  ASSERT_TRUE(apply_rerun(candidate, only_victim(load("bench-same-build.json"))).is_ok());
  auto after = compare_results(base, candidate, {});
  ASSERT_TRUE(after.is_ok());
  EXPECT_EQ(after->exit_code(true), 0) << after->verdict_line(true);
  for (const auto& e : *candidate.bench)
    if (e.case_id == victim) EXPECT_EQ(e.repetition_times_s.size(), 21u);
  // A run that errors replaces the result; a rerun of a case the candidate lacks is bad input.
  ResultsFile failing = only_victim(load("bench-base.json"));
  failing.bench->front().status = "error";
  ASSERT_TRUE(apply_rerun(candidate, failing).is_ok());
  EXPECT_EQ(compare_results(base, candidate, {})->regressions(), 1);
  ResultsFile other = load("bench-missing-and-new.json");
  EXPECT_EQ(apply_rerun(other, load("bench-base.json")).code, StatusCode::bad_input);
  // A confirmation run replaces: the 20% slower run's case, rerun at the old speed, passes.
  ResultsFile slower = load("bench-softmax-20pct-slower.json");
  ASSERT_TRUE(apply_rerun(slower, only_victim(load("bench-same-build.json")), /*replace=*/true).is_ok());
  EXPECT_EQ(compare_results(base, slower, {})->exit_code(true), 0);
}

// --- bad input: exit 2 with the file and the reason

void expect_bad_load(const std::string& name, const std::string& reason_part) {
  auto f = load_results_file(kData + name);
  ASSERT_FALSE(f.is_ok()) << name;
  EXPECT_EQ(f.status().code, StatusCode::bad_input);
  EXPECT_NE(f.status().message.find(kData + name), std::string::npos) << f.status().message;
  EXPECT_NE(f.status().message.find(reason_part), std::string::npos) << f.status().message;
}

TEST(Regression, UnreadableAndMalformedFilesAreBadInput) {
  expect_bad_load("no-such-file.json", "cannot read");
  expect_bad_load("truncated.json", "not valid JSON");
  expect_bad_load("bench-negative-time.json", "times must be positive");
  auto doc = [](const char* text) { return parse_results_json(nlohmann::json::parse(text), "x.json"); };
  EXPECT_NE(doc(R"({"results": []})").status().message.find("x.json: no 'schema_version'"), std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 2, "kind": "bench", "results": []})").status().message.find("schema_version 2"), std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "ceilings"})").status().message.find("kind 'ceilings'"), std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "bench", "results": [{"status": "ok"}]})").status().message.find("results[0]: no 'case_id'"),
            std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "bench", "results": [{"case_id": "a@b:0", "status": "ok"}]})").status().message.find(
                "no 'repetition_times_s'"),
            std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "bench", "results": [{"case_id": "a@b:0", "status": "fine"}]})").status().message.find(
                "unknown status 'fine'"),
            std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "bench", "results": [{"case_id": "a@b:0", "status": "skipped"},
                                                                       {"case_id": "a@b:1", "status": "skipped"}]})")
                .status().message.find("appears twice"),
            std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "check", "cases": [{"case": "a@b:0", "verdict": "MAYBE"}]})").status().message.find(
                "unknown verdict 'MAYBE'"),
            std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "baseline", "device_model": "X"})").status().message.find("needs 'bench', 'check'"),
            std::string::npos);
  EXPECT_NE(doc(R"({"schema_version": 1, "kind": "baseline", "device_model": "X", "bench": {"schema_version": 1, "kind": "check", "cases": []}})")
                .status().message.find("x.json: bench: kind is 'check', expected 'bench'"),
            std::string::npos);
}

TEST(Regression, MismatchedFilesAreBadInput) {
  auto kinds = compare_results(load("bench-base.json"), load("check-base.json"), {});
  ASSERT_FALSE(kinds.is_ok());
  EXPECT_EQ(kinds.status().code, StatusCode::bad_input);
  EXPECT_NE(kinds.status().message.find("nothing to compare"), std::string::npos) << kinds.status().message;
  EXPECT_NE(kinds.status().message.find(kData + "check-base.json"), std::string::npos);

  auto models = compare_results(load("bench-base.json"), load("bench-other-model.json"), {});
  ASSERT_FALSE(models.is_ok());
  EXPECT_NE(models.status().message.find("device models differ"), std::string::npos) << models.status().message;
  EXPECT_NE(models.status().message.find("'Other CPU (8 cores)'"), std::string::npos) << models.status().message;
  CompareOptions allow;
  allow.allow_device_mismatch = true;
  auto allowed = compare_results(load("bench-base.json"), load("bench-other-model.json"), allow);
  ASSERT_TRUE(allowed.is_ok()) << allowed.status().message;
  EXPECT_NE(allowed->device_models.find(" vs "), std::string::npos);

  ResultsFile other_baseline = load("baseline.json");
  other_baseline.device_model = "NVIDIA H200";
  auto baseline_model = compare_results(other_baseline, load("bench-base.json"), {});
  EXPECT_NE(baseline_model.status().message.find("'NVIDIA H200'"), std::string::npos) << baseline_model.status().message;

  ResultsFile disjoint = load("bench-base.json");
  for (auto& e : *disjoint.bench) e.match_key = e.case_id = "x" + e.case_id;
  auto none = compare_results(load("bench-base.json"), disjoint, {});
  EXPECT_NE(none.status().message.find("no bench case in common"), std::string::npos) << none.status().message;
}

// compare judges the defaults unless --variants all: a case id naming a variant is left out of
// both sides, whatever the device index; a default's case stays.
TEST(DropAlternativeCases, KeepsOnlyTheDefaultsCases) {
  ResultsFile file;
  file.bench = std::vector<BenchEntry>(3);
  (*file.bench)[0].case_id = "softmax:bf16:16384x8192@cuda:0";
  (*file.bench)[1].case_id = "softmax:bf16:16384x8192@cuda/expf:0";
  (*file.bench)[2].case_id = "softmax:bf16:7x33:fixture=odd,mask=7x33@opencl/portable_math:1.0";
  file.check = std::vector<CheckEntry>(2);
  (*file.check)[0].case_id = "relu:f32:4x64:fixture=basic@reference";
  (*file.check)[1].case_id = "gelu:bf16:64x4096@avx512/math";
  drop_alternative_cases(file);
  ASSERT_EQ(file.bench->size(), 1u);
  EXPECT_EQ((*file.bench)[0].case_id, "softmax:bf16:16384x8192@cuda:0");
  ASSERT_EQ(file.check->size(), 1u);
  EXPECT_EQ((*file.check)[0].case_id, "relu:f32:4x64:fixture=basic@reference");
}

}  // namespace
}  // namespace dnnb
