// Size sweeps: how a kernel's time and rate grow with the problem. One chart per (op, dtype,
// hardware), one line per backend/variant (CUDA and OpenCL on the same GPU share a chart), in
// one of two forms:
//   time against bytes (ops that stay memory- or launch-bound): x the minimal bytes per launch,
//   y the median time. Two floors frame it: bytes / measured DRAM bandwidth (the time at the
//   roofline) and the empty launch (what a small op cannot go under); a line that hugs the first
//   is at the memory limit, one flat on the second is launch-bound.
//   the sweep's roofline (an op that some size makes compute-bound: a product, e.g. matmul at
//   M = 1 ... 16384 with N = K = 4096): x the arithmetic intensity (FLOP per minimal byte), y the
//   achieved FLOP/s, and for each point its roofline bound, FLOP / its time at the roofline =
//   min(compute ceiling, intensity x memory bandwidth) (the empty launch where that binds), as a
//   dashed line in the series' colour; the ridge (compute ceiling / DRAM bandwidth) is marked.
//   Small sizes lie on the memory slope, large ones under the compute roof, and where a
//   backend's line leaves its bound is where it stops reaching the limit. Every backend runs the
//   same problems, so a size sits at one intensity: the top axis names each by its first
//   dimension (what `bench --sweep` varies: M of a matmul).
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

SweepChart draw_time_sweep(const ReportModel& model, const HardwareGroup& group, const SizeSweep& sweep) {
  SweepChart chart{sweep.op, sweep.dtype, group.name, "", {}, false};
  const std::string& op = sweep.op;
  const std::string& dtype = sweep.dtype;
  double bandwidth = 0, launch = 0;
  std::string launch_device;
  hardware_floors(model, group, bandwidth, launch, launch_device);

  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (const auto& s : sweep.series) {
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
  for (const auto& s : sweep.series) {
    const size_t dash_index = variant_index[s.backend]++;
    SweepSeries legend{s.label, backend_color(s.backend), variant_dash(dash_index)};
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


// The first dimension of a shape ("1024" of "1024x4096x4096"): the size `bench --sweep` varies.
std::string first_dimension(const std::string& shape) { return shape.substr(0, shape.find('x')); }

std::string roofline_sweep_title(const ResultRecord& r) {
  std::string title = r.case_id + "\n" + format_time(r.median_s) + " \xC2\xB7 " + si(r.flops_per_s, "FLOP/s") +
                      " \xC2\xB7 " + format_fixed(r.intensity, 3) + " FLOP/B";
  if (r.judged.roof_s > 0) title += "\nbound " + si(r.flops / r.judged.roof_s, "FLOP/s");
  if (!r.judged.describe().empty()) title += " \xC2\xB7 " + r.judged.describe();
  return title;
}

// Points of a roofline sweep need an intensity and a rate (log axes).
bool on_roofline(const ResultRecord& r) { return r.plottable() && r.flops > 0; }

SweepChart draw_roofline_sweep(const ReportModel& model, const HardwareGroup& group, const SizeSweep& sweep) {
  SweepChart chart{sweep.op, sweep.dtype, group.name, "", {}, true};
  // Domain: the points and their bounds; sizes named on the top axis (one intensity each).
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  std::map<double, std::string> sizes;  // intensity -> first dimension
  // Ridges: compute ceiling / DRAM bandwidth of each series with a compute-bound point, once per
  // distinct pair (CUDA and cuBLAS share theirs).
  struct Ridge {
    double flops, bandwidth;
    std::string unit;
  };
  std::vector<Ridge> ridges;
  for (const auto& s : sweep.series)
    for (size_t i : s.results) {
      const ResultRecord& r = model.results[i];
      if (!on_roofline(r)) continue;
      x_lo = std::min(x_lo, r.intensity);
      x_hi = std::max(x_hi, r.intensity);
      y_lo = std::min(y_lo, r.flops_per_s);
      y_hi = std::max(y_hi, r.flops_per_s);
      if (r.judged.roof_s > 0) {
        const double bound = r.flops / r.judged.roof_s;
        y_lo = std::min(y_lo, bound);
        y_hi = std::max(y_hi, bound);
      }
      sizes.emplace(r.intensity, first_dimension(r.shape));
      if (r.judged.bound == Bound::compute && r.own_dram.value > 0) {
        const Ridge ridge{r.judged.ceiling, r.own_dram.value, r.compute_unit};
        const bool known = std::any_of(ridges.begin(), ridges.end(), [&](const Ridge& o) {
          return std::abs(o.flops / ridge.flops - 1) < 1e-3 && std::abs(o.bandwidth / ridge.bandwidth - 1) < 1e-3;
        });
        if (!known) ridges.push_back(ridge);
      }
    }
  for (const auto& ridge : ridges) {
    x_lo = std::min(x_lo, ridge.flops / ridge.bandwidth);
    x_hi = std::max(x_hi, ridge.flops / ridge.bandwidth);
  }
  LogLogChart svg({560, 350, 64, 28, 30, 46});
  svg.set_domain(x_lo / 1.5, x_hi * 1.5, y_lo / 1.5, y_hi * 1.5, 2);
  chart.svg = svg.open("Roofline of the size sweep: " + sweep.op + " " + sweep.dtype + " on " + group.name);
  chart.svg += svg.axes({"arithmetic intensity: FLOP per minimal byte (log)", "", TickStyle::plain},
                        {"FLOP/s (log)", "", TickStyle::si});

  // The top axis: each size at its intensity, labels kept 34 px apart (the largest always shown).
  constexpr double kLabelGap = 34;
  const std::vector<std::pair<double, std::string>> ticks(sizes.begin(), sizes.end());
  std::vector<size_t> shown;
  for (size_t k = 0; k < ticks.size(); ++k)
    if (shown.empty() || svg.px(ticks[k].first) - svg.px(ticks[shown.back()].first) >= kLabelGap) shown.push_back(k);
  if (!ticks.empty() && shown.back() != ticks.size() - 1) {
    const double last = svg.px(ticks.back().first);
    while (!shown.empty() && last - svg.px(ticks[shown.back()].first) < kLabelGap) shown.pop_back();
    shown.push_back(ticks.size() - 1);
  }
  std::vector<bool> labelled(ticks.size(), false);
  for (size_t k : shown) labelled[k] = true;
  chart.svg += "<text class=\"floor-label\" x=\"" + svg_num(svg.plot_left()) + "\" y=\"" + svg_num(svg.plot_top() - 18) +
               "\">" + html_escape("size (first dimension):") + "</text>\n";
  for (size_t k = 0; k < ticks.size(); ++k) {
    const std::string x = svg_num(svg.px(ticks[k].first));
    chart.svg += "<line class=\"minor\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + svg_num(svg.plot_top()) + "\" y2=\"" +
                 svg_num(svg.plot_top() + 5) + "\"/>";
    if (labelled[k])
      chart.svg += "<text class=\"tick\" x=\"" + x + "\" y=\"" + svg_num(svg.plot_top() - 4) + "\" text-anchor=\"middle\">" +
                   html_escape(ticks[k].second) + "</text>";
  }
  chart.svg += "\n";

  // Ridges: a dotted vertical line from the bottom to the compute roof, labelled beside it (one
  // row each from the bottom up; on its left where the right side has no room); the ceilings
  // behind it in the label's tooltip.
  for (size_t k = 0; k < ridges.size(); ++k) {
    const Ridge& ridge = ridges[k];
    const double at = ridge.flops / ridge.bandwidth;
    chart.svg += svg.polyline({{at, svg.y_min()}, {at, ridge.flops}}, "class=\"floor ridge\"");
    const std::string text = ridge.unit + " ridge " + format_fixed(at, at < 10 ? 1 : 0) + " FLOP/B";
    const bool left = svg.px(at) + 8 + 6.2 * static_cast<double>(text.size()) > svg.plot_right();
    const double lx = svg.px(at) + (left ? -4 : 4), ly = svg.plot_bottom() - 6 - 13 * static_cast<double>(k);
    chart.svg += "<text class=\"floor-label\" x=\"" + svg_num(lx) + "\" y=\"" + svg_num(ly) + "\"" +
                 (left ? " text-anchor=\"end\"" : "") + "><title>" +
                 html_escape(ridge.unit + " " + si(ridge.flops, "FLOP/s") + " \xC3\xB7 DRAM " + si(ridge.bandwidth, "B/s")) +
                 "</title>" + html_escape(text) + "</text>\n";
  }

  std::map<std::string, size_t> variant_index;
  std::string markers;
  for (const auto& s : sweep.series) {
    const size_t dash_index = variant_index[s.backend]++;
    SweepSeries legend{s.label, backend_color(s.backend), variant_dash(dash_index)};
    std::vector<std::pair<double, double>> coords, bounds;
    const ResultRecord* previous = nullptr;  // the last point with a bound
    for (size_t i : s.results) {
      const ResultRecord& r = model.results[i];
      if (!on_roofline(r)) continue;
      coords.emplace_back(r.intensity, r.flops_per_s);
      if (r.judged.roof_s > 0) {
        // From a memory-bound size to a compute-bound one the bound turns at the ridge of the
        // former's bandwidth: the corner goes in, so the line is the roofline, not a chord.
        if (previous && (previous->judged.bound == Bound::dram || previous->judged.bound == Bound::cache) &&
            r.judged.bound == Bound::compute) {
          const double corner = r.judged.ceiling / previous->judged.ceiling;
          if (corner > previous->intensity && corner < r.intensity) bounds.emplace_back(corner, r.judged.ceiling);
        }
        bounds.emplace_back(r.intensity, r.flops / r.judged.roof_s);
        previous = &r;
      }
      markers += "<circle class=\"sweep-point\" cx=\"" + svg_num(svg.px(r.intensity)) + "\" cy=\"" +
                 svg_num(svg.py(r.flops_per_s)) + "\" r=\"3.5\" fill=\"" + legend.color + "\" data-row=\"" +
                 result_row_id(i) + "\"><title>" + html_escape(roofline_sweep_title(r)) + "</title></circle>\n";
    }
    chart.svg += svg.polyline(bounds, "class=\"bound\" stroke=\"" + legend.color + "\"");
    std::string attributes = "class=\"series\" stroke=\"" + legend.color + "\"";
    if (!legend.dash.empty()) attributes += " stroke-dasharray=\"" + legend.dash + "\"";
    chart.svg += svg.polyline(coords, attributes);
    chart.series.push_back(std::move(legend));
  }
  chart.svg += markers + svg.close();
  return chart;
}

}  // namespace

std::vector<SizeSweep> size_sweeps(const ReportModel& model, const std::vector<HardwareGroup>& groups) {
  // (hardware, op, dtype) -> series label -> its results
  std::map<std::tuple<size_t, std::string, std::string>, std::map<std::string, SizeSweep::Series>> found;
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
    SizeSweep::Series& s = found[{group, r.op, r.dtype}][label];
    s.label = label;
    s.backend = r.backend;
    s.variant = r.variant;
    s.results.push_back(i);
  }
  std::vector<SizeSweep> sweeps;
  for (auto& [key, series] : found) {
    const bool has_sweep = std::any_of(series.begin(), series.end(), [&](const auto& entry) {
      std::set<double> sizes;
      for (size_t i : entry.second.results) sizes.insert(model.results[i].bytes);
      return sizes.size() >= 2;
    });
    if (!has_sweep) continue;
    SizeSweep sweep{std::get<0>(key), std::get<1>(key), std::get<2>(key), false, {}};
    for (auto& [label, s] : series) {
      std::sort(s.results.begin(), s.results.end(), [&](size_t a, size_t b) {
        return std::tie(model.results[a].bytes, model.results[a].median_s) <
               std::tie(model.results[b].bytes, model.results[b].median_s);
      });
      for (size_t i : s.results)
        sweep.compute_bound = sweep.compute_bound || (model.results[i].judged.bound == Bound::compute && on_roofline(model.results[i]));
      sweep.series.push_back(std::move(s));
    }
    sweeps.push_back(std::move(sweep));
  }
  return sweeps;
}

std::vector<SweepChart> sweep_charts(const ReportModel& model, const std::vector<HardwareGroup>& groups) {
  std::vector<SweepChart> charts;
  for (const auto& sweep : size_sweeps(model, groups))
    charts.push_back(sweep.compute_bound ? draw_roofline_sweep(model, groups[sweep.group], sweep)
                                         : draw_time_sweep(model, groups[sweep.group], sweep));
  return charts;
}

}  // namespace dnnb::report
