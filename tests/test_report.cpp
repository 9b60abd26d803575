// `dnnblocks report`: loading and merging results files (tests/report/*.json follow
// docs/bench-json.md), bad input naming the file and the key, the page's points and escaping,
// and the Markdown summary. The page in a real browser: tests/report/chromium_render.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/report/report_model.h"
#include "core/report/report_text.h"
#include "core/report/report_writers.h"

namespace dnnb::report {
namespace {

const std::string kSamples = std::string(DNNB_SOURCE_DIR) + "/tests/report/";
const std::vector<std::string> kSampleFiles = {kSamples + "bench-h200.json", kSamples + "bench-epyc.json"};
// bench-h200.json: 16 ok + 1 unsupported; bench-epyc.json: 15 ok + 1 skipped. Every ok result
// has a FLOP model, so each is one roofline point.
constexpr size_t kSampleResults = 33, kSampleOk = 31;

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

std::string ok_result(const std::string& case_id, double median_s) {
  return R"({"case_id": ")" + case_id + R"(", "op": "relu", "dtype": "f32", "shape": "4x4", "params": "",
             "backend": "cuda", "variant": "", "device": "cuda:0", "device_name": "GPU", "status": "ok",
             "median_s": )" + std::to_string(median_s) + R"(, "bytes": 128, "flops": 16,
             "roofline": {"sol_percent": 12.5, "bound_by": "memory"}, "flags": []})";
}

std::string bench_file(const std::string& results, const std::string& devices = "{}") {
  return R"({"schema_version": 1, "kind": "bench", "devices": )" + devices + R"(, "results": [)" + results + "]}";
}

ReportModel load_samples() {
  auto model = load_report(kSampleFiles);
  EXPECT_TRUE(model.is_ok()) << model.status().message;
  return model.is_ok() ? *model : ReportModel{};
}

TEST(ReportModel, LoadsAndMergesTheSamples) {
  const ReportModel model = load_samples();
  EXPECT_EQ(model.files.size(), 2u);
  EXPECT_EQ(model.results.size(), kSampleResults);
  EXPECT_EQ(model.ok_count(), kSampleOk);
  EXPECT_EQ(model.devices.size(), 4u);
  EXPECT_TRUE(model.notes.empty());
  EXPECT_EQ(model.fingerprints.size(), 2u);

  const DeviceRecord& h200 = model.devices.at("cuda:0");
  EXPECT_EQ(h200.name, "NVIDIA H200");
  EXPECT_DOUBLE_EQ(h200.measured_bandwidth(), 4.35e12);  // max(copy 4.22e12, read 4.35e12)
  EXPECT_DOUBLE_EQ(h200.theoretical_bandwidth, 4.81e12);
  EXPECT_DOUBLE_EQ(h200.theoretical_flops.at("bf16"), 1.07e15);
  EXPECT_EQ(h200.theoretical_flops.count("i4"), 0u);  // null in the file: no unit
  EXPECT_EQ(model.devices.at("opencl:1.0").failed.count("dram_read_bytes_per_s"), 1u);

  const auto flagged = std::find_if(model.results.begin(), model.results.end(), [](const ResultRecord& r) {
    return r.case_id == "rmsnorm:bf16:1024x4096:eps=1e-6@cuda:0";
  });
  ASSERT_NE(flagged, model.results.end());
  EXPECT_EQ(flagged->params, "eps=1e-6");
  EXPECT_EQ(flagged->problem(), "rmsnorm:bf16:1024x4096:eps=1e-6");
  ASSERT_TRUE(flagged->bench_sol_percent.has_value());
  EXPECT_GT(*flagged->bench_sol_percent, 100);  // bench's figure, against DRAM
  ASSERT_EQ(flagged->flags.size(), 1u);
  EXPECT_NE(flagged->flags[0].find("measurement error"), std::string::npos);

  const auto skipped = std::find_if(model.results.begin(), model.results.end(),
                                    [](const ResultRecord& r) { return r.status == "skipped"; });
  ASSERT_NE(skipped, model.results.end());
  EXPECT_NE(skipped->reason.find("AVX512_FP16"), std::string::npos);
}

TEST(ReportModel, GroupsDevicesOfTheSameHardware) {
  const ReportModel model = load_samples();
  const auto groups = hardware_groups(model);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "NVIDIA H200");
  EXPECT_EQ(groups[0].device_ids, (std::vector<std::string>{"cuda:0", "opencl:1.0"}));
  EXPECT_EQ(groups[1].name, "AMD EPYC");  // PoCL's "pthread-skylake-avx512-AMD EPYC" joins it
  EXPECT_EQ(groups[1].device_ids, (std::vector<std::string>{"cpu:0", "opencl:0.0"}));

  // An OpenCL device whose name matches nothing native stands alone.
  ReportModel other;
  ASSERT_TRUE(add_report_text(other, bench_file("", R"({"opencl:0.0": {"info": {"kind": "opencl", "name": "Intel(R) Arc"}},
                                                         "cpu:0": {"info": {"kind": "cpu", "name": "AMD EPYC"}}})"),
                              "x.json").is_ok());
  EXPECT_EQ(hardware_groups(other).size(), 2u);
}

TEST(ReportModel, DuplicateCaseKeepsTheLaterAndSaysSo) {
  ReportModel model;
  ASSERT_TRUE(add_report_text(model, bench_file(ok_result("relu:f32:4x4@cuda:0", 1e-5)), "a.json").is_ok());
  ASSERT_TRUE(add_report_text(model, bench_file(ok_result("relu:f32:4x4@cuda:0", 2e-5)), "b.json").is_ok());
  ASSERT_EQ(model.results.size(), 1u);
  EXPECT_DOUBLE_EQ(model.results[0].median_s, 2e-5);
  EXPECT_EQ(model.results[0].file, "b.json");
  ASSERT_EQ(model.notes.size(), 1u);
  EXPECT_NE(model.notes[0].find("relu:f32:4x4@cuda:0"), std::string::npos);
  EXPECT_NE(model.notes[0].find("a.json"), std::string::npos);
  EXPECT_NE(model.notes[0].find("b.json"), std::string::npos);
  // The derived rates come from bytes, FLOP and the median when the file leaves them out.
  EXPECT_DOUBLE_EQ(model.results[0].bytes_per_s, 128 / 2e-5);
  EXPECT_DOUBLE_EQ(model.results[0].intensity, 16.0 / 128);
}

TEST(ReportModel, MalformedInputIsBadInputNamingFileAndKey) {
  const std::string ok = ok_result("relu:f32:4x4@cuda:0", 1e-5);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"schema_version\": 1, \"results\": [", "not JSON"},
      {"[1, 2]", "(top level): expected an object"},
      {R"({"results": []})", "schema_version: missing"},
      {R"({"schema_version": 2, "results": []})", "schema_version: is 2"},
      {R"({"schema_version": 1, "kind": "check", "results": []})", "kind: is 'check'"},
      {R"({"schema_version": 1})", "results: missing"},
      {R"({"schema_version": 1, "results": {}})", "results: expected an array"},
      {bench_file("7"), "results[0]: expected an object"},
      {bench_file(R"({"status": "ok"})"), "results[0].case_id: missing"},
      {bench_file(ok + R"(, {"case_id": "x", "status": "great", "op": "relu"})"), "results[1].status: 'great'"},
      {bench_file(R"({"case_id": "x", "status": "ok", "op": "relu", "dtype": "f32", "shape": "4", "backend": "cuda",
                      "device": "cuda:0", "median_s": "fast", "bytes": 1, "flops": 1})"),
       "results[0].median_s: expected a number, got string"},
      {bench_file(R"({"case_id": "x", "status": "ok", "op": "relu", "dtype": "f32", "shape": "4", "backend": "cuda",
                      "device": "cuda:0", "median_s": 1e-5, "bytes": -1, "flops": 1})"),
       "results[0].bytes: must be a finite number >= 0"},
      {bench_file(R"({"case_id": "x", "status": "ok", "op": "relu", "dtype": "f32", "shape": "4", "backend": "cuda",
                      "device": "cuda:0", "median_s": 1e-5, "bytes": 1, "flops": 1, "roofline": {"sol_percent": "92"}})"),
       "results[0].roofline.sol_percent: expected a number"},
      {bench_file(R"({"case_id": "x", "status": "error", "op": "relu", "dtype": "f32", "shape": "4", "backend": "cuda",
                      "device": "cuda:0", "flags": ["a", 3]})"),
       "results[0].flags[1]: expected a string"},
      {bench_file("", R"({"cuda:0": {"ceilings": {"measured": {"dram_copy_bytes_per_s": {"value": "fast"}}}}})"),
       "devices.cuda:0.ceilings.measured.dram_copy_bytes_per_s.value: expected a number"},
      {bench_file("", R"({"cuda:0": {"info": {"peaks": {"flops_per_s": {"f32": true}}}}})"),
       "devices.cuda:0.info.peaks.flops_per_s.f32: expected a number"},
  };
  for (const auto& [text, key] : cases) {
    ReportModel model;
    const Status status = add_report_text(model, text, "bad.json");
    EXPECT_EQ(status.code, StatusCode::bad_input) << text;
    EXPECT_NE(status.message.find("bad.json: " + key), std::string::npos) << "want '" << key << "' in: " << status.message;
    EXPECT_TRUE(model.results.empty() && model.files.empty()) << "a bad file must leave nothing behind";
  }
}

TEST(ReportModel, MissingFileIsBadInputNamingIt) {
  auto model = load_report({kSamples + "no-such-file.json"});
  ASSERT_FALSE(model.is_ok());
  EXPECT_EQ(model.status().code, StatusCode::bad_input);
  EXPECT_NE(model.status().message.find("no-such-file.json"), std::string::npos);
}

TEST(ReportHtml, OnePointPerOkResultAndNothingFetched) {
  const ReportModel model = load_samples();
  const std::string page = html_page(model);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count_of(page, "<circle class=\"point\""), kSampleOk);
  // Flagged: the measurement error, two missed noise targets and one throttled run.
  EXPECT_EQ(count_of(page, "class=\"flag-ring\""), 4u);
  EXPECT_NE(page.find("exceeds-dram-ceiling-in-cache: measurement error"), std::string::npos);
  // Non-ok results are listed with their reasons.
  EXPECT_NE(page.find("AVX512_FP16 is not usable on this CPU"), std::string::npos);
  EXPECT_NE(page.find("no bf16 cross_entropy kernel"), std::string::npos);
  // Self-contained: no URL, no source attribute, no CSS url(); one script, ours.
  for (const char* fetch : {"http://", "https://", "src=", "url(", "@import"})
    EXPECT_EQ(page.find(fetch), std::string::npos) << fetch;
  EXPECT_EQ(count_of(page, "<script"), 1u);
  EXPECT_NE(page.find("Content-Security-Policy"), std::string::npos);
  // Sweeps: softmax and rmsnorm bf16 on the H200, softmax and add f32 on the EPYC.
  EXPECT_EQ(count_of(page, "<polyline points=") > 0, true);
  EXPECT_EQ(count_of(page, "class=\"sweep-point\""), kSampleOk - 1);  // cross_entropy ran at one size: no sweep
}

TEST(ReportHtml, EscapesEveryInputString) {
  const std::string evil_case = "relu:f32:4x4@<script>alert(1)</script>:0";
  ReportModel model;
  ASSERT_TRUE(add_report_text(model,
                              bench_file(ok_result(evil_case, 1e-5) +
                                         R"(, {"case_id": "x\"><img src=x onerror=alert(2)>", "status": "error",
                                              "op": "o", "dtype": "d", "shape": "s", "backend": "<b>", "device": "cuda:0",
                                              "reason": "a 'quoted' & <i>tagged</i> reason"})"),
                              "evil.json")
                  .is_ok());
  const std::string page = html_page(model);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<i>tagged"), std::string::npos);
  EXPECT_NE(page.find("a &#39;quoted&#39; &amp; &lt;i&gt;tagged&lt;/i&gt; reason"), std::string::npos);
  EXPECT_EQ(count_of(page, "<script"), 1u);
  EXPECT_EQ(count_of(page, "<circle class=\"point\""), 1u);

  const std::string summary = markdown_summary(model);
  EXPECT_EQ(summary.find("<script>"), std::string::npos);
  EXPECT_EQ(summary.find("<img"), std::string::npos);
}

TEST(ReportHtml, ZeroResultsSaysSo) {
  ReportModel model;
  ASSERT_TRUE(add_report_text(model, bench_file(""), "empty.json").is_ok());
  const std::string page = html_page(model);
  EXPECT_NE(page.find("No results"), std::string::npos);
  EXPECT_EQ(count_of(page, "<circle class=\"point\""), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  EXPECT_EQ(markdown_summary(model).rfind("**dnnblocks report**: no results in empty.json", 0), 0u);
}

TEST(ReportMarkdown, VerdictFirstThenWorstBestLaunchBoundAndFailures) {
  const ReportModel model = load_samples();
  const std::string summary = markdown_summary(model);
  EXPECT_EQ(summary.rfind("**dnnblocks report**: 31 of 33 cases measured on 4 devices", 0), 0u) << summary;
  // One median per bound, and none for the reference.
  EXPECT_NE(summary.find("Median % of roofline: cuda: DRAM-bound 88.0% (4), launch-bound 71.2% (6); "), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("avx512: DRAM-bound 83.0% (1), cache-bound 6.3% (4)"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("reference: "), std::string::npos);
  EXPECT_NE(summary.find("The float64 reference is the oracle: listed, not ranked."), std::string::npos);
  const size_t worst = summary.find("### Furthest from the roofline");
  const size_t best = summary.find("### Closest to the roofline");
  const size_t launch = summary.find("### Launch-bound: furthest from the empty launch");
  const size_t failed = summary.find("### Not measured");
  ASSERT_NE(worst, std::string::npos);
  ASSERT_NE(best, std::string::npos);
  ASSERT_NE(launch, std::string::npos);
  ASSERT_NE(failed, std::string::npos);
  EXPECT_LT(worst, best);
  EXPECT_LT(best, launch);
  EXPECT_LT(launch, failed);
  // The worst first: PoCL's cached softmax against the CPU's cache ceiling (PoCL has no cache
  // probe), not the scalar reference at 2.1% of DRAM.
  EXPECT_NE(summary.find("| 2.8% | cache 1.90 TB/s | softmax:f32:256x4096@opencl:0.0 |", worst), std::string::npos);
  EXPECT_EQ(summary.find("@reference:0 |"), std::string::npos);
  EXPECT_NE(summary.find("| 64.7% | launch 3.30 \xC2\xB5s | softmax:bf16:64x4096@cuda:0 |", launch), std::string::npos);
  EXPECT_NE(summary.find("4 float64 reference result(s) are listed on the page but not ranked"), std::string::npos);
  EXPECT_NE(summary.find("AVX512\\_FP16 is not usable", failed), std::string::npos);
}

// Judging (report_judge.cpp): files made here so that each rule has one case that only it
// decides.
std::string probe(const std::string& name, double value, double spread) {
  return "\"" + name + "\": {\"value\": " + std::to_string(value) + ", \"spread\": " + std::to_string(spread) + "}";
}

std::string device(const std::string& kind, const std::string& name, const std::string& probes) {
  return R"({"info": {"kind": ")" + kind + R"(", "name": ")" + name + R"("}, "ceilings": {"measured": {)" + probes + "}}}";
}

struct TimedCase {
  std::string backend, device, shape;
  double median_s, bytes, working_set_bytes, cache_bytes;
};

std::string timed_result(const TimedCase& c) {
  char numbers[256];
  std::snprintf(numbers, sizeof numbers,
                R"("median_s": %.17g, "bytes": %.17g, "flops": 0, "working_set_bytes": %.17g, "cache_bytes": %.17g)",
                c.median_s, c.bytes, c.working_set_bytes, c.cache_bytes);
  const std::string index = c.device.substr(c.device.find(':') + 1);
  return R"({"case_id": "softmax:f32:)" + c.shape + "@" + c.backend + ":" + index +
         R"(", "op": "softmax", "dtype": "f32", "shape": ")" + c.shape + R"(", "backend": ")" + c.backend +
         R"(", "device": ")" + c.device + R"(", "status": "ok", )" + numbers + "}";
}

const ResultRecord& result_of(const ReportModel& model, const std::string& case_id) {
  auto it = std::find_if(model.results.begin(), model.results.end(),
                         [&](const ResultRecord& r) { return r.case_id == case_id; });
  EXPECT_NE(it, model.results.end()) << case_id;
  return it == model.results.end() ? model.results.front() : *it;
}

bool has_warning(const ResultRecord& r, const std::string& text) {
  const auto warnings = r.warnings();
  return std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

constexpr double kMiB = 1 << 20;

TEST(ReportJudge, AWorkingSetInTheCacheIsJudgedAgainstTheCacheCeiling) {
  // A CPU whose cached 64x8192 softmax runs at 231% of DRAM: judged against the cache it is 27.7%.
  const std::string cpu = device("cpu", "CPU", probe("dram_copy_bytes_per_s", 100e9, 0.04) + ", " +
                                                   probe("dram_read_bytes_per_s", 120e9, 0.02) + ", " +
                                                   probe("cache_read_bytes_per_s", 1000e9, 0.1));
  const double small = 6 * kMiB, large = 1536 * kMiB, cache = 32 * kMiB;
  ReportModel model;
  ASSERT_TRUE(add_report_text(model,
                              bench_file(timed_result({"avx512", "cpu:0", "64x8192", small / 277e9, small, small, cache}) + ", " +
                                             timed_result({"avx512", "cpu:0", "16384x8192", large / 96e9, large, large, cache}) + ", " +
                                             timed_result({"avx512", "cpu:0", "64x8191", small / 1100e9, small, small, cache}),
                                         R"({"cpu:0": )" + cpu + "}"),
                              "cpu.json")
                  .is_ok());
  const ResultRecord& cached = result_of(model, "softmax:f32:64x8192@avx512:0");
  EXPECT_EQ(cached.judged.bound, Bound::cache);
  ASSERT_TRUE(cached.judged.percent.has_value());
  EXPECT_NEAR(*cached.judged.percent, 27.7, 1e-6);
  EXPECT_EQ(cached.judged.roof(), "cache 1.00 TB/s");
  EXPECT_TRUE(cached.warnings().empty());

  const ResultRecord& dram = result_of(model, "softmax:f32:16384x8192@avx512:0");
  EXPECT_EQ(dram.judged.bound, Bound::dram);
  EXPECT_NEAR(*dram.judged.percent, 80, 1e-6);  // against the read stream, the larger DRAM probe
  EXPECT_EQ(dram.judged.spread, 0.02);

  // Above its ceiling: shown with a flag that says so and gives the probe's spread.
  const ResultRecord& above = result_of(model, "softmax:f32:64x8191@avx512:0");
  EXPECT_NEAR(*above.judged.percent, 110, 1e-6);
  EXPECT_TRUE(has_warning(above, "above the measured cache ceiling (1.00 TB/s, spread \xC2\xB1" "5.0%)")) << above.judged.note;
  const std::string summary = markdown_summary(model);
  EXPECT_NE(summary.find("| 110.0% | cache 1.00 TB/s | softmax:f32:64x8191@avx512:0 |"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("231"), std::string::npos);
}

TEST(ReportJudge, CacheFiguresComeFromTheNativeDeviceOfTheSameHardware) {
  // NVIDIA's OpenCL reports a 4 MiB "global memory cache" and has no cache probe: its cases use
  // the CUDA device's L2 (60 MiB) and L2 ceiling. A stand-alone device without a cache ceiling
  // is judged against DRAM, and a figure above it says that no cache ceiling was measured.
  const std::string gpu = probe("dram_read_bytes_per_s", 4e12, 0.01) + ", " + probe("empty_launch_s", 1e-6, 0.01);
  const std::string devices = R"({"cuda:0": )" + device("cuda", "NVIDIA H200", gpu + ", " + probe("cache_read_bytes_per_s", 8e12, 0.03)) +
                              R"(, "opencl:1.0": )" + device("opencl", "NVIDIA H200", gpu) +
                              R"(, "opencl:2.0": )" + device("opencl", "Other GPU", probe("dram_read_bytes_per_s", 500e9, 0.01)) + "}";
  const double set = 16 * kMiB;
  ReportModel model;
  ASSERT_TRUE(add_report_text(model,
                              bench_file(timed_result({"cuda", "cuda:0", "2048x2048", set / 4e12, set, set, 60 * kMiB}) + ", " +
                                             timed_result({"opencl", "opencl:1.0", "2048x2048", set / 4e12, set, set, 4 * kMiB}) + ", " +
                                             timed_result({"opencl", "opencl:2.0", "512x512", kMiB / 600e9, kMiB, kMiB, 4 * kMiB}),
                                         devices),
                              "gpu.json")
                  .is_ok());
  for (const char* id : {"softmax:f32:2048x2048@cuda:0", "softmax:f32:2048x2048@opencl:1.0"}) {
    const ResultRecord& r = result_of(model, id);
    EXPECT_EQ(r.judged.bound, Bound::cache) << id;
    EXPECT_NEAR(*r.judged.percent, 50, 1e-6) << id;
  }
  const ResultRecord& alone = result_of(model, "softmax:f32:512x512@opencl:2.0");
  EXPECT_EQ(alone.judged.bound, Bound::dram);
  EXPECT_NEAR(*alone.judged.percent, 120, 1e-6);
  EXPECT_TRUE(has_warning(alone, "last-level cache, for which no ceiling was measured")) << alone.judged.note;
}

TEST(ReportJudge, LaunchBoundCasesAreJudgedAgainstTheEmptyLaunchAndNeverPooled) {
  const std::string devices = R"({"cuda:0": )" +
                              device("cuda", "GPU", probe("dram_read_bytes_per_s", 4e12, 0.01) + ", " +
                                                        probe("cache_read_bytes_per_s", 8e12, 0.03) + ", " +
                                                        probe("empty_launch_s", 2e-6, 0.01)) + "}";
  const double tiny = 64 * 1024, large = 1024 * kMiB;
  ReportModel model;
  ASSERT_TRUE(add_report_text(model,
                              bench_file(timed_result({"cuda", "cuda:0", "1x8192", 8e-6, tiny, tiny, 60 * kMiB}) + ", " +
                                             timed_result({"cuda", "cuda:0", "1x4096", 1.6e-6, tiny / 2, tiny / 2, 60 * kMiB}) + ", " +
                                             timed_result({"cuda", "cuda:0", "16384x16384", large / 4e12 / 0.9, large, large, 60 * kMiB}),
                                         devices),
                              "gpu.json")
                  .is_ok());
  const ResultRecord& tiny_case = result_of(model, "softmax:f32:1x8192@cuda:0");
  EXPECT_EQ(tiny_case.judged.bound, Bound::launch);
  EXPECT_NEAR(*tiny_case.judged.percent, 25, 1e-6);  // the empty launch over its time
  EXPECT_EQ(tiny_case.judged.roof(), "launch 2.00 \xC2\xB5s");
  const ResultRecord& faster = result_of(model, "softmax:f32:1x4096@cuda:0");
  EXPECT_NEAR(*faster.judged.percent, 125, 1e-6);
  EXPECT_TRUE(has_warning(faster, "faster than the measured empty launch (2.00 \xC2\xB5s, spread \xC2\xB1" "0.5%)"))
      << faster.judged.note;
  EXPECT_EQ(result_of(model, "softmax:f32:16384x16384@cuda:0").judged.bound, Bound::dram);

  const auto summaries = backend_summaries(model);
  ASSERT_EQ(summaries.size(), 1u);
  const auto& by_bound = summaries[0].by_bound;
  ASSERT_EQ(by_bound.size(), 2u);
  EXPECT_EQ(by_bound.at(Bound::dram).count, 1u);
  EXPECT_NEAR(by_bound.at(Bound::dram).median, 90, 1e-6);
  EXPECT_EQ(by_bound.at(Bound::launch).count, 2u);
  EXPECT_NEAR(by_bound.at(Bound::launch).median, 75, 1e-6);

  const std::string summary = markdown_summary(model);
  EXPECT_NE(summary.find("cuda: DRAM-bound 90.0% (1), launch-bound 75.0% (2)"), std::string::npos) << summary;
  const size_t roof = summary.find("### Furthest from the roofline"), launch = summary.find("### Launch-bound");
  ASSERT_NE(roof, std::string::npos);
  ASSERT_NE(launch, std::string::npos);
  EXPECT_LT(summary.find("@cuda:0", roof), launch);
  EXPECT_GT(summary.find("softmax:f32:1x8192@cuda:0"), launch);  // the tiny case is ranked only with its kind
  const std::string page = html_page(model);
  EXPECT_NE(page.find("launch-bound</th>"), std::string::npos);
  EXPECT_NE(page.find("<b>75.0%</b>"), std::string::npos);
}

TEST(ReportJudge, TheReferenceIsListedButNeverRanked) {
  const std::string devices = R"({"cpu:0": )" + device("cpu", "CPU", probe("dram_read_bytes_per_s", 100e9, 0.01)) + "}";
  const double large = 1024 * kMiB;
  ReportModel model;
  ASSERT_TRUE(add_report_text(model,
                              bench_file(timed_result({"reference", "cpu:0", "16384x16384", large / 2e9, large, large, 0}) + ", " +
                                             timed_result({"avx512", "cpu:0", "16384x16384", large / 80e9, large, large, 0}),
                                         devices),
                              "cpu.json")
                  .is_ok());
  const ResultRecord& oracle = result_of(model, "softmax:f32:16384x16384@reference:0");
  EXPECT_EQ(oracle.judged.bound, Bound::oracle);
  EXPECT_FALSE(oracle.judged.percent.has_value());
  const auto summaries = backend_summaries(model);
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_TRUE(summaries[0].oracle);
  EXPECT_TRUE(summaries[0].by_bound.empty());
  EXPECT_NEAR(summaries[1].by_bound.at(Bound::dram).median, 80, 1e-6);

  const std::string summary = markdown_summary(model);
  EXPECT_EQ(summary.find("reference: "), std::string::npos) << summary;  // no median
  EXPECT_EQ(summary.find("@reference:0 |"), std::string::npos) << summary;  // in no ranked table
  EXPECT_NE(summary.find("not ranked"), std::string::npos);
  const std::string page = html_page(model);
  EXPECT_NE(page.find("softmax:<wbr>f32:<wbr>16384x16384<wbr>@reference:<wbr>0"), std::string::npos);  // listed
  EXPECT_NE(page.find(">oracle</span>"), std::string::npos);
  EXPECT_NE(page.find("the float64 oracle: listed, not ranked"), std::string::npos);
}

TEST(ReportText, UnitsAndEscaping) {
  EXPECT_EQ(si(4.22e12, "B/s"), "4.22 TB/s");
  EXPECT_EQ(si(412e-6, "s"), "412 \xC2\xB5s");
  EXPECT_EQ(si(999.7e-9, "s"), "1.00 \xC2\xB5s");  // rounding carries into the next prefix
  EXPECT_EQ(si(0, "s"), "\xE2\x80\x93");
  EXPECT_EQ(html_escape("<a href='x'>\"&\x01"), "&lt;a href=&#39;x&#39;&gt;&quot;&amp;\xEF\xBF\xBD");
  EXPECT_EQ(md_escape("a|b_c*<d>"), "a\\|b\\_c\\*&lt;d&gt;");
  EXPECT_EQ(base64_of_hex("666f6f"), "Zm9v");
  EXPECT_EQ(base64_of_hex("666f"), "Zm8=");
}

}  // namespace
}  // namespace dnnb::report
