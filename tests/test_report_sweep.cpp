// `dnnblocks report` on size sweeps (core/report/sweep_chart.cpp, docs/report.md "Reading a
// product sweep"): a matmul sweep over M at N = K = 4096 that goes from DRAM-bound to
// compute-bound is drawn as its own roofline, each point with its bound, the ridge marked and
// the sizes named; the Markdown summary tabulates it; a sweep that stays memory-bound keeps the
// time chart. The files are made here so every figure is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/report/report_charts.h"
#include "core/report/report_model.h"
#include "core/report/report_writers.h"

namespace dnnb::report {
namespace {

constexpr double kDram = 100e9, kDot = 1e12;  // the CPU's DRAM read stream and bf16_dot ceiling
constexpr double kN = 4096, kK = 4096;

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

double matmul_bytes(double m) { return 2 * (m * kK + kK * kN + m * kN); }  // bf16 a, b and y
double matmul_flops(double m) { return 2 * m * kN * kK; }

// A bf16 matmul of M x 4096 x 4096 at `fraction` of its roofline (max of DRAM and bf16_dot).
std::string matmul_result(const std::string& backend, int m, double fraction) {
  const double bytes = matmul_bytes(m), flops = matmul_flops(m);
  const double roof_s = std::max(bytes / kDram, flops / kDot);
  char numbers[320];
  std::snprintf(numbers, sizeof numbers,
                R"("median_s": %.17g, "bytes": %.17g, "flops": %.17g, "working_set_bytes": %.17g, "cache_bytes": 0)",
                roof_s / fraction, bytes, flops, bytes);
  const std::string shape = std::to_string(m) + "x4096x4096";
  return R"({"case_id": "matmul:bf16:)" + shape + "@" + backend + R"(:0", "op": "matmul", "dtype": "bf16", "shape": ")" +
         shape + R"(", "backend": ")" + backend + R"(", "device": "cpu:0", "status": "ok", "compute_unit": "bf16_dot", )" +
         numbers + "}";
}

std::string relu_result(int rows) {
  const double bytes = 2.0 * 4 * rows * 8192;
  char numbers[256];
  std::snprintf(numbers, sizeof numbers,
                R"("median_s": %.17g, "bytes": %.17g, "flops": %.17g, "working_set_bytes": %.17g, "cache_bytes": 0)",
                bytes / kDram / 0.8, bytes, bytes / 8, bytes);
  const std::string shape = std::to_string(rows) + "x8192";
  return R"({"case_id": "relu:f32:)" + shape + R"(@avx512:0", "op": "relu", "dtype": "f32", "shape": ")" + shape +
         R"(", "backend": "avx512", "device": "cpu:0", "status": "ok", "compute_unit": "f32_fma", )" + numbers + "}";
}

std::string sweep_file() {
  std::string results;
  // avx512 at 90% of its roof everywhere; onednn at 30% at small M, 80% from M = 256 on.
  for (int m : {1, 4, 16, 64, 256, 1024, 4096}) {
    results += (results.empty() ? "" : ", ") + matmul_result("avx512", m, 0.9);
    results += ", " + matmul_result("onednn", m, m >= 256 ? 0.8 : 0.3);
  }
  for (int rows : {1, 64, 4096}) results += ", " + relu_result(rows);
  char probes[256];
  std::snprintf(probes, sizeof probes,
                R"("dram_read_bytes_per_s": {"value": %.17g, "spread": 0.01}, "bf16_dot_flops_per_s": {"value": %.17g, "spread": 0.02})",
                kDram, kDot);
  return R"({"schema_version": 1, "kind": "bench", "devices": {"cpu:0": {"info": {"kind": "cpu", "name": "CPU"},
             "ceilings": {"measured": {)" + std::string(probes) + R"(}}}}, "results": [)" + results + "]}";
}

ReportModel sweep_model() {
  ReportModel model;
  const Status loaded = add_report_text(model, sweep_file(), "sweep.json");
  EXPECT_TRUE(loaded.is_ok()) << loaded.message;
  return model;
}

const ResultRecord& result_of(const ReportModel& model, const std::string& case_id) {
  auto it = std::find_if(model.results.begin(), model.results.end(),
                         [&](const ResultRecord& r) { return r.case_id == case_id; });
  EXPECT_NE(it, model.results.end()) << case_id;
  return it == model.results.end() ? model.results.front() : *it;
}

// The number of points of the first polyline whose attributes hold `marker`.
size_t polyline_points(const std::string& svg, const std::string& marker) {
  const size_t at = svg.find(marker);
  if (at == std::string::npos) return 0;
  const size_t start = svg.rfind("points=\"", at);
  if (start == std::string::npos) return 0;
  const size_t end = svg.find('"', start + 8);
  return count_of(svg.substr(start + 8, end - start - 8), ",");
}

TEST(ReportSweep, ProductsGoFromTheMemoryRoofToTheComputeRoof) {
  const ReportModel model = sweep_model();
  // The ridge is 1e12 / 100e9 = 10 FLOP/B: M = 1 and 4 are DRAM-bound (about 1 and 4 FLOP/B),
  // M = 16 and up compute-bound; each point's roof time is the larger of the two.
  const ResultRecord& small = result_of(model, "matmul:bf16:1x4096x4096@avx512:0");
  EXPECT_EQ(small.judged.bound, Bound::dram);
  EXPECT_NEAR(small.judged.roof_s, matmul_bytes(1) / kDram, 1e-12);
  EXPECT_NEAR(*small.judged.percent, 90, 1e-6);
  const ResultRecord& large = result_of(model, "matmul:bf16:4096x4096x4096@onednn:0");
  EXPECT_EQ(large.judged.bound, Bound::compute);
  EXPECT_NEAR(large.judged.roof_s, matmul_flops(4096) / kDot, 1e-12);
  EXPECT_EQ(large.judged.roof(), "compute 1.00 TFLOP/s");
  EXPECT_EQ(result_of(model, "matmul:bf16:16x4096x4096@avx512:0").judged.bound, Bound::compute);

  const auto groups = hardware_groups(model);
  const auto sweeps = size_sweeps(model, groups);
  ASSERT_EQ(sweeps.size(), 2u);  // matmul bf16 and relu f32 on the one CPU
  const auto product = std::find_if(sweeps.begin(), sweeps.end(), [](const SizeSweep& s) { return s.op == "matmul"; });
  ASSERT_NE(product, sweeps.end());
  EXPECT_TRUE(product->compute_bound);
  ASSERT_EQ(product->series.size(), 2u);
  EXPECT_EQ(product->series[0].label, "avx512");
  ASSERT_EQ(product->series[0].results.size(), 7u);
  for (size_t k = 1; k < 7; ++k)  // in order of size
    EXPECT_LT(model.results[product->series[0].results[k - 1]].bytes, model.results[product->series[0].results[k]].bytes);
  const auto relu = std::find_if(sweeps.begin(), sweeps.end(), [](const SizeSweep& s) { return s.op == "relu"; });
  ASSERT_NE(relu, sweeps.end());
  EXPECT_FALSE(relu->compute_bound);
}

TEST(ReportSweep, TheProductChartDrawsEachPointsBoundAndTheRidge) {
  const ReportModel model = sweep_model();
  const auto charts = sweep_charts(model, hardware_groups(model));
  ASSERT_EQ(charts.size(), 2u);
  const auto product = std::find_if(charts.begin(), charts.end(), [](const SweepChart& c) { return c.op == "matmul"; });
  ASSERT_NE(product, charts.end());
  EXPECT_TRUE(product->roofline);
  const std::string& svg = product->svg;
  EXPECT_NE(svg.find("FLOP per minimal byte"), std::string::npos);
  EXPECT_EQ(count_of(svg, "class=\"sweep-point\""), 14u);
  // One bound per series: its 7 points and the corner at the ridge between M = 4 (DRAM) and 16.
  EXPECT_EQ(count_of(svg, "class=\"bound\""), 2u);
  EXPECT_EQ(polyline_points(svg, "class=\"bound\""), 8u);
  // One ridge (both series have the same ceilings), labelled with its unit and intensity.
  EXPECT_EQ(count_of(svg, "class=\"floor ridge\""), 1u);
  EXPECT_NE(svg.find("bf16_dot ridge 10 FLOP/B"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>bf16_dot 1.00 TFLOP/s \xC3\xB7 DRAM 100 GB/s</title>"), std::string::npos);
  // The sizes on the top axis, the smallest and the largest at least.
  EXPECT_NE(svg.find("size (first dimension):"), std::string::npos);
  EXPECT_NE(svg.find("text-anchor=\"middle\">1</text>"), std::string::npos);
  EXPECT_NE(svg.find("text-anchor=\"middle\">4096</text>"), std::string::npos);

  const auto time_chart = std::find_if(charts.begin(), charts.end(), [](const SweepChart& c) { return c.op == "relu"; });
  ASSERT_NE(time_chart, charts.end());
  EXPECT_FALSE(time_chart->roofline);
  EXPECT_NE(time_chart->svg.find("median time (log)"), std::string::npos);
  EXPECT_EQ(time_chart->svg.find("class=\"bound\""), std::string::npos);

  const std::string page = html_page(model);
  EXPECT_NE(page.find("on CPU: roofline of the sweep"), std::string::npos);
}

TEST(ReportSweep, TheSummaryTabulatesProductSweepsBySizeAndBackend) {
  const std::string summary = markdown_summary(sweep_model());
  const size_t section = summary.find("### Size sweeps of products");
  ASSERT_NE(section, std::string::npos) << summary;
  EXPECT_NE(summary.find("**matmul bf16 on CPU**", section), std::string::npos) << summary;
  EXPECT_NE(summary.find("| Shape | avx512 | onednn |", section), std::string::npos);
  EXPECT_NE(summary.find("| 1x4096x4096 | 90.0 GFLOP/s, 90.0% DRAM | 30.0 GFLOP/s, 30.0% DRAM |", section),
            std::string::npos) << summary;
  EXPECT_NE(summary.find("| 4096x4096x4096 | 900 GFLOP/s, 90.0% compute | 800 GFLOP/s, 80.0% compute |", section),
            std::string::npos) << summary;
  EXPECT_EQ(summary.find("relu", section), std::string::npos);  // memory-bound sweeps are not tabulated
}

}  // namespace
}  // namespace dnnb::report
