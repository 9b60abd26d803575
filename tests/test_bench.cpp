// The bench's promises: results carry Google Benchmark's records and ours side by side,
// buffers rotate past the cache for cold figures, an injected slowdown is a real one, bad
// options are bad input, and bench inputs match check's seeded inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "core/bench.h"
#include "core/bench_case.h"
#include "core/check.h"
#include "core/host_device.h"

namespace dnnb {
namespace {

BenchOptions tiny_options() {
  BenchOptions o;
  o.op_glob = "add";
  o.backend = "reference";
  o.dtype = "f32";
  o.size = "4x256";
  o.repetitions = 3;
  o.min_time_s = 1e-4;
  o.max_time_s = 0.2;
  o.ceilings_path = "";
  return o;
}

TEST(Bench, ResultsFileHoldsGoogleBenchmarkRecordsAndOurs) {
  int callbacks = 0;
  auto run = run_bench(tiny_options(), [&](const BenchResult&, const DeviceCeilings*, size_t done, size_t total) {
    ++callbacks;
    EXPECT_EQ(done, 1u);
    EXPECT_EQ(total, 1u);
  });
  ASSERT_TRUE(run.is_ok()) << run.status().message;
  ASSERT_EQ(run->results.size(), 1u);
  EXPECT_EQ(callbacks, 1);
  const BenchResult& r = run->results[0];
  ASSERT_EQ(r.status, StatusCode::ok) << r.reason;
  EXPECT_EQ(r.id.to_string(), "add:f32:4x256@reference:0");
  EXPECT_GE(r.repetition_times_s.size(), 3u);
  EXPECT_GT(r.median_s, 0);
  EXPECT_GT(r.bytes, 0);
  const nlohmann::json j = bench_file_json(*run, "test");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["kind"], "bench");
  ASSERT_TRUE(j["context"].is_object());
  // Google Benchmark's own entries: one per repetition plus its aggregates, under our name.
  ASSERT_TRUE(j["benchmarks"].is_array());
  size_t repetitions = 0;
  for (const auto& b : j["benchmarks"])
    if (b["run_type"] == "iteration") {
      ++repetitions;
      EXPECT_EQ(b["run_name"], j["results"][0]["benchmark_name"]);
    }
  EXPECT_EQ(repetitions, r.repetition_times_s.size());
  const auto& x = j["results"][0];
  for (const char* key : {"case_id", "median_s", "cv", "samples", "bytes_per_s", "flops_per_s", "intensity", "roofline",
                          "cache_policy", "rotation_sets", "repetition_times_s", "timer"})
    EXPECT_TRUE(x.contains(key)) << key;
  EXPECT_TRUE(j["devices"].contains("cpu:0"));
  EXPECT_TRUE(j["devices"]["cpu:0"]["ceilings"]["measured"].contains("dram_copy_bytes_per_s"));
  EXPECT_GT(x["roofline"]["sol_percent"].get<double>(), 0);
  EXPECT_FALSE(j["fingerprint"]["git_commit"].get<std::string>().empty());
}

TEST(Bench, ColdPolicyRotatesSetsPastTheCache) {
  auto run = run_bench(tiny_options());
  ASSERT_TRUE(run.is_ok());
  const BenchResult& r = run->results[0];
  ASSERT_GT(r.cache_bytes, 0) << "the CPU reports no last-level cache";
  // 4x256 f32 add: a few KiB per set, so many sets are needed to exceed twice the cache.
  EXPECT_GT(r.rotation_sets, 1);
  EXPECT_GE(r.rotation_sets * r.working_set_bytes, std::min(2 * r.cache_bytes, 1024 * r.working_set_bytes));
  BenchOptions hot = tiny_options();
  hot.cache = CachePolicy::hot;
  auto hot_run = run_bench(hot);
  ASSERT_TRUE(hot_run.is_ok());
  EXPECT_EQ(hot_run->results[0].rotation_sets, 1);
}

TEST(Bench, InjectedSlowdownIsARealDelay) {
  // Other tests share CI's two cores, so any one run may be slowed by half or more. Compare the
  // fastest repetition of two interleaved runs each: a neighbour only ever adds time, so the
  // minimum is the undisturbed figure (a single pair of medians can invert when the unslowed
  // run is crowded out).
  BenchOptions o = tiny_options();
  o.size = "64x4096";
  o.repetitions = 5;
  BenchOptions slowed = o;
  slowed.slowdown_glob = "add:*";
  slowed.slowdown_percent = 100;
  double base_min_s = 1e30, slow_min_s = 1e30;
  for (int pair = 0; pair < 2; ++pair) {
    auto base = run_bench(o);
    auto slow = run_bench(slowed);
    ASSERT_TRUE(base.is_ok() && slow.is_ok());
    ASSERT_EQ(base->results[0].status, StatusCode::ok) << base->results[0].reason;
    ASSERT_EQ(slow->results[0].status, StatusCode::ok) << slow->results[0].reason;
    EXPECT_FALSE(slow->results[0].flags.empty());
    base_min_s = std::min(base_min_s, base->results[0].min_s);
    slow_min_s = std::min(slow_min_s, slow->results[0].min_s);
  }
  // +100% of the calibrated launch time doubles the undisturbed time; 1.4x leaves room for
  // noise in the calibration (the median of five launches) and in either minimum.
  EXPECT_GT(slow_min_s, 1.4 * base_min_s) << "slowed " << slow_min_s << " s, unslowed " << base_min_s << " s";
}

TEST(Bench, BadOptionsAreBadInput) {
  BenchOptions o = tiny_options();
  o.op_glob = "no_such_op";
  EXPECT_EQ(run_bench(o).status().code, StatusCode::bad_input);
  o = tiny_options();
  o.backend = "no_such_backend";
  EXPECT_EQ(run_bench(o).status().code, StatusCode::bad_input);
  o = tiny_options();
  o.size = "4xq";
  EXPECT_EQ(run_bench(o).status().code, StatusCode::bad_input);
  o = tiny_options();
  o.case_ids = {"add:f32:4x4@nowhere"};
  EXPECT_EQ(run_bench(o).status().code, StatusCode::bad_input);
  o = tiny_options();
  o.ceilings_path = "/nonexistent/ceilings.json";
  auto missing = run_bench(o);
  EXPECT_EQ(missing.status().code, StatusCode::bad_input);
  EXPECT_NE(missing.status().message.find("/nonexistent/ceilings.json"), std::string::npos);
}

TEST(Bench, CaseIdRunsExactlyThatCase) {
  BenchOptions o = tiny_options();
  o.case_ids = {"mul:f32:8x128@reference:0"};
  auto run = run_bench(o);
  ASSERT_TRUE(run.is_ok()) << run.status().message;
  ASSERT_EQ(run->results.size(), 1u);
  EXPECT_EQ(run->results[0].id.to_string(), "mul:f32:8x128@reference:0");
}

TEST(Bench, SweepGrowsRowsByFourUpToTheProblem) {
  BenchOptions o = tiny_options();
  o.size = "100x128";  // the sweep's top, as a spec's bench problem would be
  o.sweep = true;
  o.op_glob = "relu";
  o.max_time_s = 0.05;
  o.repetitions = 2;
  auto run = run_bench(o);
  ASSERT_TRUE(run.is_ok()) << run.status().message;
  std::vector<std::string> shapes;
  for (const auto& r : run->results) shapes.push_back(shape_to_string(r.id.problem.shape));
  EXPECT_EQ(shapes, (std::vector<std::string>{"1x128", "4x128", "16x128", "64x128", "100x128"}));
}

// Bench inputs of `big` (tiled from 256 rows) and check's seeded inputs of `small` (256 rows).
struct TiledAndDirect {
  std::vector<Tensor> tiled, direct;
};
TiledAndDirect tiled_and_direct(const std::string& op, const std::string& big_text, const std::string& small_text) {
  const OpSpec* spec = Registry::instance().find_op(op);
  EXPECT_NE(spec, nullptr);
  auto big = Problem::parse(big_text);
  auto small = Problem::parse(small_text);
  EXPECT_TRUE(spec && big.is_ok() && small.is_ok());
  if (!spec || !big.is_ok() || !small.is_ok()) return {};
  auto big_sig = spec->signature(*big);
  auto small_sig = spec->signature(*small);
  EXPECT_TRUE(big_sig.is_ok() && small_sig.is_ok());
  if (!big_sig.is_ok() || !small_sig.is_ok()) return {};
  auto tiled = make_bench_inputs(*spec, *big, *big_sig);
  auto direct = make_random_inputs(*spec, *small, *small_sig);
  EXPECT_TRUE(tiled.is_ok() && direct.is_ok());
  if (!tiled.is_ok() || !direct.is_ok()) return {};
  return {*tiled, *direct};
}

TEST(Bench, TiledInputsMatchCheckInputsOnTheFilledRows) {
  auto in = tiled_and_direct("layernorm", "layernorm:f32:1024x64", "layernorm:f32:256x64");
  ASSERT_FALSE(in.tiled.empty() || in.direct.empty());
  const auto* t = static_cast<const float*>(in.tiled[0].host_data());
  const auto* d = static_cast<const float*>(in.direct[0].host_data());
  for (int i = 0; i < 256 * 64; ++i) ASSERT_EQ(t[i], d[i]) << i;
  for (int i = 0; i < 256 * 64; ++i) ASSERT_EQ(t[768 * 64 + i], d[i]) << i;  // the repeat
}

TEST(Bench, RowBroadcastOperandIsTiledWithItsRows) {
  // b=1024x1 follows a's 1024 rows: both are filled on 256 rows and repeated, as check fills
  // the 256-row problem with b=256x1.
  auto in = tiled_and_direct("add", "add:f32:1024x64:b=1024x1", "add:f32:256x64:b=256x1");
  ASSERT_FALSE(in.tiled.size() < 2 || in.direct.size() < 2);
  ASSERT_EQ(in.tiled[1].shape, (Shape{1024, 1}));
  const auto* t = static_cast<const float*>(in.tiled[1].host_data());
  const auto* d = static_cast<const float*>(in.direct[1].host_data());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(t[i], d[i % 256]) << i;
}

TEST(Bench, RooflineJudgesAgainstTheMeasuredCeilingAndFlagsCacheFigures) {
  DeviceCeilings c;
  c.device = "cpu:0";
  c.measured["dram_copy_bytes_per_s"] = ProbeResult{1e9, 0, 1, "synthetic"};
  BenchResult r;
  r.bytes = 1e6;
  r.flops = 0;
  r.median_s = 1e-4;  // 10 GB/s against a 1 GB/s ceiling
  r.compute_unit = "f32_fma";
  const nlohmann::json roof = roofline_json(r, &c, nullptr);
  EXPECT_NEAR(roof["sol_percent"].get<double>(), 1000, 1e-6);
  EXPECT_EQ(roof["bound_by"], "memory");
  EXPECT_NEAR(roof["pct_of_copy"].get<double>(), 1000, 1e-6);
  r.working_set_bytes = 1e6;
  r.rotation_sets = 1;
  r.cache_bytes = 32e6;
  flag_impossible_figures(&c, r);
  ASSERT_EQ(r.flags.size(), 1u);
  EXPECT_NE(r.flags[0].find("measurement error"), std::string::npos);
  BenchResult fine = r;
  fine.flags.clear();
  fine.median_s = 1e-2;  // 0.1 GB/s: under the ceiling, nothing to flag
  flag_impossible_figures(&c, fine);
  EXPECT_TRUE(fine.flags.empty());
}

}  // namespace
}  // namespace dnnb
