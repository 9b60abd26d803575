// The page's charts: the roofline of each physical device (every ok result a point against the
// measured and theoretical ceilings of the devices on that hardware) and the size sweeps (one
// line per backend/variant: time against bytes beside the bandwidth and launch floors, or, for
// a sweep that becomes compute-bound, FLOP/s against intensity beside each point's bound).
#pragma once
#include <string>
#include <vector>

#include "core/report/report_model.h"

namespace dnnb::report {

struct RooflineChart {
  std::string svg;
  size_t points = 0;             // circles with class "point": one per plottable result
  size_t not_plottable = 0;      // ok results without a FLOP model (intensity 0): in the table only
  std::vector<std::string> backends, dtypes;  // present among the points, for the legend
};
RooflineChart roofline_chart(const ReportModel& model, const HardwareGroup& group);

struct SweepSeries {
  std::string label;   // backend[/variant][@device]
  std::string color;
  std::string dash;    // stroke-dasharray, "" for solid
};
struct SweepChart {
  std::string op, dtype, hardware;
  std::string svg;
  std::vector<SweepSeries> series;
  bool roofline = false;  // drawn as the sweep's roofline (FLOP/s against intensity), else time against bytes
};

// The ok results of one (op, dtype, hardware) where some backend ran at two sizes or more: one
// series per backend[/variant][@device], its results in order of size (minimal bytes).
struct SizeSweep {
  size_t group = 0;  // index into the hardware groups
  std::string op, dtype;
  // Some size is judged compute-bound (a product sweep): drawn as the sweep's roofline.
  bool compute_bound = false;
  struct Series {
    std::string label, backend, variant;
    std::vector<size_t> results;  // indices into model.results
  };
  std::vector<Series> series;
};
std::vector<SizeSweep> size_sweeps(const ReportModel& model, const std::vector<HardwareGroup>& groups);
// One chart per size sweep (sweep_chart.cpp says what each form shows).
std::vector<SweepChart> sweep_charts(const ReportModel& model, const std::vector<HardwareGroup>& groups);

// Index of each result in model.results, as the page's row ids ("r-12") that points link to.
std::string result_row_id(size_t index);

}  // namespace dnnb::report
