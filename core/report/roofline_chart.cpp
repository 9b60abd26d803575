// The roofline of one physical device. x: arithmetic intensity (FLOP per minimal byte), y:
// achieved FLOP/s, both log. The bandwidth ceiling is the line y = B x, each compute ceiling a
// flat line from its ridge point (P / B); measured ceilings are solid, theoretical ones dashed,
// the cache bandwidth dotted. A point's height under the roof is its distance from the limit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

#include "core/report/report_charts.h"
#include "core/report/report_text.h"
#include "core/report/svg_chart.h"

namespace dnnb::report {

std::string result_row_id(size_t index) { return "r-" + std::to_string(index); }

namespace {

struct CeilingLine {
  double bandwidth = 0;  // > 0: the slope y = bandwidth * x
  double flops = 0;      // > 0: the flat line y = flops
  double ridge_bandwidth = 0;  // flat lines start where this slope meets them (0: at the left edge)
  double top_flops = 0;        // slopes stop where they meet this roof (0: at the edge)
  std::string style;     // "measured", "theoretical", "cache"
  bool secondary = false;  // a device other than the group's primary one: drawn lighter
  std::string label;
};

const char* const kFlopsSuffix = "_flops_per_s";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The lines of one device: measured DRAM and cache slopes and compute ceilings; theoretical
// DRAM and the theoretical peaks of the dtypes that results on this hardware use (plus f32).
void add_device_lines(const DeviceRecord& device, const std::set<std::string>& dtypes, bool secondary,
                      bool name_device, std::vector<CeilingLine>& lines) {
  const std::string suffix = name_device ? " (" + device.id + ")" : "";
  const double bandwidth = device.measured_bandwidth();
  const double cache = device.measured_value("cache_read_bytes_per_s");
  double top_measured = 0, top_theoretical = 0;
  for (const auto& [probe, value] : device.measured) {
    if (!ends_with(probe, kFlopsSuffix) || !(value.value > 0)) continue;
    const std::string unit = probe.substr(0, probe.size() - std::string(kFlopsSuffix).size());
    lines.push_back({0, value.value, bandwidth, 0, "measured", secondary, unit + " " + si(value.value, "FLOP/s") + suffix});
    top_measured = std::max(top_measured, value.value);
  }
  const double theoretical_bandwidth = device.theoretical_bandwidth > 0 ? device.theoretical_bandwidth : bandwidth;
  for (const auto& [dtype, value] : device.theoretical_flops) {
    if (dtype != "f32" && !dtypes.count(dtype)) continue;  // i8, fp8, f64... are in the table
    lines.push_back({0, value, theoretical_bandwidth, 0, "theoretical", secondary,
                     dtype + " peak " + si(value, "FLOP/s") + suffix});
    top_theoretical = std::max(top_theoretical, value);
  }
  if (bandwidth > 0)
    lines.push_back({bandwidth, 0, 0, top_measured > 0 ? top_measured : top_theoretical, "measured", secondary,
                     "DRAM " + si(bandwidth, "B/s") + suffix});
  if (device.theoretical_bandwidth > 0)
    lines.push_back({device.theoretical_bandwidth, 0, 0, top_theoretical > 0 ? top_theoretical : top_measured,
                     "theoretical", secondary, "DRAM peak " + si(device.theoretical_bandwidth, "B/s") + suffix});
  if (cache > 0)
    lines.push_back({cache, 0, 0, top_measured > 0 ? top_measured : top_theoretical, "cache", secondary,
                     "cache " + si(cache, "B/s") + suffix});
}

std::string point_title(const ResultRecord& r) {
  std::string title = r.case_id + "\n" + format_time(r.median_s) + " median \xC2\xB7 " + si(r.bytes_per_s, "B/s") +
                      " \xC2\xB7 " + si(r.flops_per_s, "FLOP/s") + "\n" + format_fixed(r.intensity, 3) + " FLOP/B";
  if (!r.judged.describe().empty()) title += " \xC2\xB7 " + r.judged.describe();
  for (const auto& warning : r.warnings()) title += "\n\xE2\x9A\xA0 " + warning;
  return title;
}

struct PixelSegment {
  double x1, y1, x2, y2;
};

// How many drawn lines and points a box would cover (lines sampled along their length).
int covered(double x, double y, double w, double h, const std::vector<PixelSegment>& lines,
            const std::vector<std::pair<double, double>>& points) {
  auto inside = [&](double px, double py, double margin) {
    return px >= x - margin && px <= x + w + margin && py >= y - margin && py <= y + h + margin;
  };
  int hits = 0;
  for (const auto& s : lines)
    for (int k = 0; k <= 64; ++k) {
      const double t = k / 64.0;
      if (inside(s.x1 + t * (s.x2 - s.x1), s.y1 + t * (s.y2 - s.y1), 2)) {
        ++hits;
        break;
      }
    }
  for (const auto& [px, py] : points) hits += inside(px, py, 7);
  return hits;
}

// The key of the sloped ceilings, in the first corner where it covers no line and no point:
// top-left (above the memory roof, where no kernel can be), then bottom-right, bottom-left,
// top-right; else wherever it covers least.
std::string slope_key(const LogLogChart& svg, const std::vector<const CeilingLine*>& slopes,
                      const std::vector<PixelSegment>& lines, const std::vector<std::pair<double, double>>& points) {
  if (slopes.empty()) return "";
  size_t longest = 0;
  for (const auto* line : slopes) longest = std::max(longest, line->label.size());
  const double w = 44 + 6.4 * static_cast<double>(longest), h = 8 + 16 * static_cast<double>(slopes.size());
  const double left = svg.plot_left() + 10, right = svg.plot_right() - 10 - w;
  const double top = svg.plot_top() + 10, bottom = svg.plot_bottom() - 10 - h;
  const std::pair<double, double> corners[] = {{left, top}, {right, bottom}, {left, bottom}, {right, top}};
  double x = left, y = top;
  int least = INT32_MAX;
  for (const auto& [cx, cy] : corners) {
    const int hits = covered(cx, cy, w, h, lines, points);
    if (hits < least) {
      least = hits;
      x = cx;
      y = cy;
    }
    if (hits == 0) break;
  }
  std::string out = "<g class=\"slope-key\"><rect x=\"" + svg_num(x) + "\" y=\"" + svg_num(y) + "\" width=\"" +
                    svg_num(w) + "\" height=\"" + svg_num(h) + "\"/>";
  for (size_t k = 0; k < slopes.size(); ++k) {
    const CeilingLine& line = *slopes[k];
    const double row = y + 16 + 16 * static_cast<double>(k);
    const std::string cls = line.style + (line.secondary ? " secondary" : "");
    out += "<line class=\"roof " + cls + "\" x1=\"" + svg_num(x + 8) + "\" x2=\"" + svg_num(x + 32) + "\" y1=\"" +
           svg_num(row - 4) + "\" y2=\"" + svg_num(row - 4) + "\"/><text class=\"slope-label " + cls + "\" x=\"" +
           svg_num(x + 38) + "\" y=\"" + svg_num(row) + "\">" + html_escape(line.label) + "</text>";
  }
  return out + "</g>\n";
}

}  // namespace

RooflineChart roofline_chart(const ReportModel& model, const HardwareGroup& group) {
  RooflineChart chart;
  std::vector<size_t> members;  // indices of this group's ok results
  std::set<std::string> dtypes, backends;
  for (size_t i = 0; i < model.results.size(); ++i) {
    const ResultRecord& r = model.results[i];
    if (!r.ok() || std::find(group.device_ids.begin(), group.device_ids.end(), r.device) == group.device_ids.end())
      continue;
    if (!r.plottable()) {
      ++chart.not_plottable;
      continue;
    }
    members.push_back(i);
    dtypes.insert(r.dtype);
    backends.insert(r.backend);
  }
  chart.dtypes.assign(dtypes.begin(), dtypes.end());
  chart.backends.assign(backends.begin(), backends.end());

  std::vector<CeilingLine> lines;
  size_t devices_with_ceilings = 0;
  for (const auto& id : group.device_ids) {
    auto it = model.devices.find(id);
    if (it != model.devices.end() && (!it->second.measured.empty() || !it->second.theoretical_flops.empty()))
      ++devices_with_ceilings;
  }
  for (const auto& id : group.device_ids) {
    auto it = model.devices.find(id);
    if (it != model.devices.end())
      add_device_lines(it->second, dtypes, id != group.primary, devices_with_ceilings > 1, lines);
  }

  // Domain: every point, every ceiling and every ridge point, with room around them.
  double x_lo = INFINITY, x_hi = 0, y_lo = INFINITY, y_hi = 0;
  for (size_t i : members) {
    const ResultRecord& r = model.results[i];
    x_lo = std::min(x_lo, r.intensity);
    x_hi = std::max(x_hi, r.intensity);
    y_lo = std::min(y_lo, r.flops_per_s);
    y_hi = std::max(y_hi, r.flops_per_s);
  }
  double top_ceiling = 0;
  for (const auto& line : lines) {
    if (line.flops > 0) {
      top_ceiling = std::max(top_ceiling, line.flops);
      y_hi = std::max(y_hi, line.flops);
      if (members.empty()) y_lo = std::min(y_lo, line.flops / 1e4);
      if (line.ridge_bandwidth > 0) {
        x_lo = std::min(x_lo, line.flops / line.ridge_bandwidth);
        x_hi = std::max(x_hi, line.flops / line.ridge_bandwidth);
      }
    }
  }
  if (!std::isfinite(x_lo)) x_lo = 0.01;
  LogLogChart svg({900, 500, 76, 210, 14, 50});
  svg.set_domain(x_lo / 2, std::max(x_hi * 4, x_lo * 1e3), y_lo / 2, y_hi * 1.5, 3);

  chart.svg = svg.open("Roofline of " + group.name);
  chart.svg += svg.axes({"arithmetic intensity: FLOP per byte (log)", "", TickStyle::plain},
                        {"FLOP/s (log)", "", TickStyle::si});

  // Ceilings: slopes clipped to the domain and their roof, flat lines from their ridge.
  std::vector<Label> right;
  // Slopes are nearly parallel and short, and points crowd under them, so their labels go in a
  // key placed clear of lines and points (slope_key).
  std::vector<const CeilingLine*> slopes;
  std::vector<PixelSegment> drawn;
  for (const auto& line : lines) {
    const std::string cls = "roof " + line.style + (line.secondary ? " secondary" : "");
    if (line.flops > 0) {
      if (line.flops < svg.y_min() || line.flops > svg.y_max()) continue;
      const double start = line.ridge_bandwidth > 0 ? std::max(svg.x_min(), line.flops / line.ridge_bandwidth) : svg.x_min();
      chart.svg += svg.polyline({{start, line.flops}, {svg.x_max(), line.flops}}, "class=\"" + cls + "\"");
      drawn.push_back({svg.px(start), svg.py(line.flops), svg.px(svg.x_max()), svg.py(line.flops)});
      right.push_back({svg.py(line.flops), line.label, "roof-label " + line.style + (line.secondary ? " secondary" : "")});
      continue;
    }
    const double roof = line.top_flops > 0 ? std::min(line.top_flops, svg.y_max()) : svg.y_max();
    const double start = std::max(svg.x_min(), svg.y_min() / line.bandwidth);
    const double end = std::min(svg.x_max(), roof / line.bandwidth);
    if (!(start < end)) continue;
    chart.svg += svg.polyline({{start, start * line.bandwidth}, {end, end * line.bandwidth}}, "class=\"" + cls + "\"");
    drawn.push_back({svg.px(start), svg.py(start * line.bandwidth), svg.px(end), svg.py(end * line.bandwidth)});
    slopes.push_back(&line);
  }
  std::vector<std::pair<double, double>> point_pixels;
  for (size_t i : members)
    point_pixels.emplace_back(svg.px(model.results[i].intensity), svg.py(model.results[i].flops_per_s));
  chart.svg += slope_key(svg, slopes, drawn, point_pixels) + svg.right_labels(right);
  if (lines.empty())
    chart.svg += "<text class=\"chart-note\" x=\"" + svg_num(svg.plot_left() + 12) + "\" y=\"" +
                 svg_num(svg.plot_top() + 20) + "\">no ceilings in the results file: points only</text>\n";

  // Points: flagged ones get a red ring underneath; each links to its table row.
  std::string rings, points;
  for (size_t i : members) {
    const ResultRecord& r = model.results[i];
    const std::string cx = svg_num(svg.px(r.intensity)), cy = svg_num(svg.py(r.flops_per_s));
    if (!r.warnings().empty())
      rings += "<circle class=\"flag-ring\" cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"8\"/>";
    points += "<circle class=\"point\" cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"5\" " +
              dtype_mark_attributes(r.dtype, backend_color(r.backend)) + " data-row=\"" + result_row_id(i) +
              "\"><title>" + html_escape(point_title(r)) + "</title></circle>\n";
    ++chart.points;
  }
  chart.svg += "<g class=\"points\">" + rings + "\n" + points + "</g>\n" + svg.close();
  return chart;
}

}  // namespace dnnb::report
