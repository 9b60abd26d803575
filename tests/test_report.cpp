// `dnnblocks report`: loading and merging results files (tests/report/*.json follow
// docs/bench-json.md), bad input naming the file and the key, the page's points and escaping,
// and the Markdown summary. The page in a real browser: tests/report/chromium_render.sh.
#include <gtest/gtest.h>

#include <algorithm>
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
  ASSERT_TRUE(flagged->sol_percent.has_value());
  EXPECT_GT(*flagged->sol_percent, 100);
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

TEST(ReportMarkdown, VerdictFirstThenWorstBestAndFailures) {
  const ReportModel model = load_samples();
  const std::string summary = markdown_summary(model);
  EXPECT_EQ(summary.rfind("**dnnblocks report**: 31 of 33 cases measured on 4 devices", 0), 0u) << summary;
  EXPECT_NE(summary.find("Median % of roofline: cuda "), std::string::npos);
  const size_t worst = summary.find("### Furthest from the roofline");
  const size_t best = summary.find("### Closest to the roofline");
  const size_t failed = summary.find("### Not measured");
  ASSERT_NE(worst, std::string::npos);
  ASSERT_NE(best, std::string::npos);
  ASSERT_NE(failed, std::string::npos);
  EXPECT_LT(worst, best);
  EXPECT_LT(best, failed);
  // The worst first: the scalar reference at 2.1%.
  EXPECT_NE(summary.find("| 2.1% | softmax:f32:64x4096@reference:0 |", worst), std::string::npos);
  EXPECT_NE(summary.find("AVX512\\_FP16 is not usable", failed), std::string::npos);
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
