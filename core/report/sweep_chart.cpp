// Size sweeps: how time grows with the problem. One chart per (op, dtype, hardware), x the
// minimal bytes per launch, y the median time, one line per backend/variant (CUDA and OpenCL
// on the same GPU share a chart). Two floors frame it: bytes / measured DRAM bandwidth (the
// time at the roofline) and the empty launch (what a small op cannot go under); a line that
// hugs the first is at the memory limit, one flat on the second is launch-bound.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "core/report/report_charts.h"
#include "core/report/report_text.h"
#include "core/report/svg_chart.h"

namespace dnnb::report {

namespace {

struct SeriesPoints {
  std::string backend, variant;
  std::vector<size_t> results;  // indices into model.results
};

// The DRAM ceiling and the empty launch of the hardware: its primary device first. The launch
// is named by its device when it is not the primary's (PoCL's launch is no floor for AVX-512).
void hardware_floors(const ReportModel& model, const HardwareGroup& group, double& bandwidth, double& launch,
                     std::string& launch_device) {
  bandwidth = 0;
  launch = 0;
  for (const auto& id : group.device_ids) {
    auto it = model.devices.find(id);
    if (it == model.devices.end()) continue;
    if (bandwidth == 0) bandwidth = it->second.measured_bandwidth();
    if (bandwidth == 0) bandwidth = it->second.theoretical_bandwidth;
    if (launch == 0) {
      launch = it->second.measured_value("empty_launch_s");
      launch_device = id == group.primary ? "" : id;
    }
  }
}

const char* variant_dash(size_t index) {
  static const char* const kDashes[] = {"", "7 4", "2 3", "9 3 2 3", "4 2"};
  return kDashes[index % 5];
}

std::string sweep_title(const ResultRecord& r) {
  std::string title = r.case_id + "\n" + format_time(r.median_s) + " \xC2\xB7 " + si(r.bytes, "B") + " \xC2\xB7 " +
                      si(r.bytes_per_s, "B/s");
  if (!r.judged.describe().empty()) title += " \xC2\xB7 " + r.judged.describe();
  return title;
}

SweepChart draw_sweep(const ReportModel& model, const HardwareGroup& group, const std::string& op,
                      const std::string& dtype, std::map<std::string, SeriesPoints>& series) {
  SweepChart chart{op, dtype, group.name, "", {}};
  double bandwidth = 0, launch = 0;
  std::string launch_device;
  hardware_floors(model, group, bandwidth, launch, launch_device);

  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (auto& [label, s] : series) {
    std::sort(s.results.begin(), s.results.end(), [&](size_t a, size_t b) {
      return std::tie(model.results[a].bytes, model.results[a].median_s) <
             std::tie(model.results[b].bytes, model.results[b].median_s);
    });
    for (size_t i : s.results) {
      x_lo = std::min(x_lo, model.results[i].bytes);
      x_hi = std::max(x_hi, model.results[i].bytes);
      y_lo = std::min(y_lo, model.results[i].median_s);
      y_hi = std::max(y_hi, model.results[i].median_s);
    }
  }
  if (launch > 0) y_lo = std::min(y_lo, launch);
  if (bandwidth > 0) y_lo = std::min(y_lo, x_lo / bandwidth);
  LogLogChart svg({560, 330, 64, 28, 12, 46});  // right margin: room for the last tick label
  svg.set_domain(x_lo / 1.5, x_hi * 1.5, y_lo / 1.5, y_hi * 1.5, 2);
  chart.svg = svg.open("Time against bytes: " + op + " " + dtype + " on " + group.name);
  chart.svg += svg.axes({"minimal bytes per launch (log)", "B", TickStyle::si}, {"median time (log)", "s", TickStyle::si});

  if (bandwidth > 0) {
    // t = bytes / B, clipped to where it is inside the plot.
    const double start = std::max(svg.x_min(), svg.y_min() * bandwidth);
    const double end = std::min(svg.x_max(), svg.y_max() * bandwidth);
    if (start < end) {
      chart.svg += svg.polyline({{start, start / bandwidth}, {end, end / bandwidth}}, "class=\"floor bandwidth\"");
      const double at = start * std::pow(end / start, 0.72);
      const double lx = svg.px(at), ly = svg.py(at / bandwidth) + 13;
      chart.svg += "<text class=\"floor-label\" x=\"" + svg_num(lx) + "\" y=\"" + svg_num(ly) + "\" transform=\"rotate(" +
                   svg_num(svg.angle_of_slope(1)) + " " + svg_num(lx) + " " + svg_num(ly) + ")\">" +
                   html_escape("bytes \xC3\xB7 " + si(bandwidth, "B/s")) + "</text>\n";
    }
  }
  if (launch > 0 && launch >= svg.y_min()) {
    chart.svg += svg.polyline({{svg.x_min(), launch}, {svg.x_max(), launch}}, "class=\"floor launch\"");
    // At the right end, where the largest sizes are far above the floor.
    chart.svg += "<text class=\"floor-label\" x=\"" + svg_num(svg.plot_right() - 6) + "\" y=\"" +
                 svg_num(svg.py(launch) + 13) + "\" text-anchor=\"end\">" +
                 html_escape("empty launch " + format_time(launch) +
                             (launch_device.empty() ? "" : " (" + launch_device + ")")) + "</text>\n";
  }

  // Variants of one backend share its colour and differ by dash.
  std::map<std::string, size_t> variant_index;
  std::string markers;
  for (auto& [label, s] : series) {
    const size_t dash_index = variant_index[s.backend]++;
    SweepSeries legend{label, backend_color(s.backend), variant_dash(dash_index)};
    std::vector<std::pair<double, double>> coords;
    for (size_t i : s.results) {
      const ResultRecord& r = model.results[i];
      coords.emplace_back(r.bytes, r.median_s);
      markers += "<circle class=\"sweep-point\" cx=\"" + svg_num(svg.px(r.bytes)) + "\" cy=\"" +
                 svg_num(svg.py(r.median_s)) + "\" r=\"3.5\" fill=\"" + legend.color + "\" data-row=\"" +
                 result_row_id(i) + "\"><title>" + html_escape(sweep_title(r)) + "</title></circle>\n";
    }
    std::string attributes = "class=\"series\" stroke=\"" + legend.color + "\"";
    if (!legend.dash.empty()) attributes += " stroke-dasharray=\"" + legend.dash + "\"";
    chart.svg += svg.polyline(coords, attributes);
    chart.series.push_back(std::move(legend));
  }
  chart.svg += markers + svg.close();
  return chart;
}

}  // namespace

std::vector<SweepChart> sweep_charts(const ReportModel& model, const std::vector<HardwareGroup>& groups) {
  // (hardware, op, dtype) -> series label -> its results
  std::map<std::tuple<size_t, std::string, std::string>, std::map<std::string, SeriesPoints>> sweeps;
  std::map<std::pair<size_t, std::string>, std::set<std::string>> devices_of_label;
  for (size_t i = 0; i < model.results.size(); ++i) {
    const ResultRecord& r = model.results[i];
    if (!r.ok() || !(r.bytes > 0)) continue;
    devices_of_label[{group_of(groups, r.device), r.backend_label()}].insert(r.device);
  }
  for (size_t i = 0; i < model.results.size(); ++i) {
    const ResultRecord& r = model.results[i];
    if (!r.ok() || !(r.bytes > 0)) continue;
    const size_t group = group_of(groups, r.device);
    if (group == groups.size()) continue;
    // The same backend on two devices of one hardware (two OpenCL platforms) stays two lines.
    std::string label = r.backend_label();
    if (devices_of_label[{group, label}].size() > 1) label += "@" + r.device;
    SeriesPoints& s = sweeps[{group, r.op, r.dtype}][label];
    s.backend = r.backend;
    s.variant = r.variant;
    s.results.push_back(i);
  }
  std::vector<SweepChart> charts;
  for (auto& [key, series] : sweeps) {
    const bool has_sweep = std::any_of(series.begin(), series.end(), [&](const auto& entry) {
      std::set<double> sizes;
      for (size_t i : entry.second.results) sizes.insert(model.results[i].bytes);
      return sizes.size() >= 2;
    });
    if (has_sweep) charts.push_back(draw_sweep(model, groups[std::get<0>(key)], std::get<1>(key), std::get<2>(key), series));
  }
  return charts;
}

}  // namespace dnnb::report
