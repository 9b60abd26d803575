#include "core/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/report/report_text.h"

namespace dnnb::report {

std::string backend_color(const std::string& backend) {
  static const std::map<std::string, std::string> kKnown = {
      {"cuda", "#2e7d32"},   {"opencl", "#e65100"}, {"avx512", "#1565c0"}, {"onednn", "#7b1fa2"},
      {"reference", "#757575"}, {"torch", "#c62828"}, {"pytorch", "#c62828"}};
  auto it = kKnown.find(backend);
  if (it != kKnown.end()) return it->second;
  // Others get a stable colour from their name: the same backend is the same colour everywhere.
  static const char* const kSpare[] = {"#00838f", "#ad1457", "#827717", "#4e342e", "#283593", "#5d4037"};
  unsigned hash = 2166136261u;
  for (char c : backend) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return kSpare[hash % (sizeof kSpare / sizeof kSpare[0])];
}

std::string dtype_mark_attributes(const std::string& dtype, const std::string& color) {
  if (dtype == "f32") return "fill=\"" + color + "\" stroke=\"#fff\" stroke-width=\"1\"";
  if (dtype == "bf16") return "fill=\"#fff\" stroke=\"" + color + "\" stroke-width=\"2.2\"";
  if (dtype == "f16") return "fill=\"" + color + "\" fill-opacity=\"0.35\" stroke=\"" + color + "\" stroke-width=\"1.6\"";
  return "fill=\"" + color + "\" fill-opacity=\"0.6\" stroke=\"#000\" stroke-width=\"1.2\" stroke-dasharray=\"2 1.5\"";
}

std::string dtype_swatch(const std::string& dtype, const std::string& color) {
  return "<svg class=\"swatch\" width=\"14\" height=\"14\" viewBox=\"0 0 14 14\" aria-hidden=\"true\">"
         "<circle cx=\"7\" cy=\"7\" r=\"5\" " + dtype_mark_attributes(dtype, color) + "/></svg>";
}

std::string svg_num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", std::isfinite(v) ? v : 0.0);
  return text;
}

double LogLogChart::pow10_(double e) { return std::pow(10.0, e); }

void LogLogChart::set_domain(double x_lo, double x_hi, double y_lo, double y_hi, int min_decades) {
  auto span = [&](double lo, double hi, double& e0, double& e1) {
    if (!(lo > 0) || !std::isfinite(lo)) lo = hi > 0 && std::isfinite(hi) ? hi / 100 : 1;
    if (!(hi > 0) || !std::isfinite(hi) || hi < lo) hi = lo * 100;
    e0 = std::floor(std::log10(lo));
    e1 = std::ceil(std::log10(hi));
    while (e1 - e0 < min_decades) {
      e0 -= 1;  // widen both ways, the top first: room above the highest ceiling for its label
      if (e1 - e0 < min_decades) e1 += 1;
    }
    if (e1 - e0 > kMaxDecades) e0 = e1 - kMaxDecades;
  };
  span(x_lo, x_hi, x0_, x1_);
  span(y_lo, y_hi, y0_, y1_);
}

double LogLogChart::px(double x) const {
  const double e = x > 0 ? std::clamp(std::log10(x), x0_, x1_) : x0_;
  return plot_left() + (e - x0_) / (x1_ - x0_) * (plot_right() - plot_left());
}

double LogLogChart::py(double y) const {
  const double e = y > 0 ? std::clamp(std::log10(y), y0_, y1_) : y0_;
  return plot_bottom() - (e - y0_) / (y1_ - y0_) * (plot_bottom() - plot_top());
}

double LogLogChart::angle_of_slope(double slope) const {
  const double per_decade_x = (plot_right() - plot_left()) / (x1_ - x0_);
  const double per_decade_y = (plot_bottom() - plot_top()) / (y1_ - y0_);
  return -std::atan2(slope * per_decade_y, per_decade_x) * 180 / M_PI;
}

std::string LogLogChart::open(const std::string& aria_label) const {
  std::string out = "<svg class=\"chart\" viewBox=\"0 0 " + std::to_string(box_.width) + " " +
                    std::to_string(box_.height) + "\" role=\"img\" aria-label=\"" + html_escape(aria_label) + "\">\n";
  out += "<rect class=\"plot-bg\" x=\"" + svg_num(plot_left()) + "\" y=\"" + svg_num(plot_top()) + "\" width=\"" +
         svg_num(plot_right() - plot_left()) + "\" height=\"" + svg_num(plot_bottom() - plot_top()) + "\"/>\n";
  return out;
}

namespace {

std::string tick_text(int exponent, const Axis& axis) {
  if (axis.style == TickStyle::si) {
    // Powers of ten: si() prints "1.00 k"; tick labels read better without the decimals.
    std::string text = si(std::pow(10.0, exponent), axis.unit.c_str());
    const size_t dot = text.find(".00");
    if (dot != std::string::npos) text.erase(dot, 3);
    const size_t dot0 = text.find(".0 ");
    if (dot0 != std::string::npos) text.erase(dot0, 2);
    return text;
  }
  if (exponent >= 0 && exponent <= 6) return std::to_string(static_cast<long long>(std::llround(std::pow(10.0, exponent))));
  if (exponent < 0 && exponent >= -4) return "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + "1";
  return "1e" + std::to_string(exponent);
}

}  // namespace

std::string LogLogChart::axes(const Axis& x, const Axis& y) const {
  std::string grid, ticks, labels;
  const int x_decades = static_cast<int>(x1_ - x0_), y_decades = static_cast<int>(y1_ - y0_);
  // Label every decade while they fit (about 44 px each), else every other one.
  const int x_step = (plot_right() - plot_left()) / std::max(1, x_decades) < 44 ? 2 : 1;
  const int y_step = (plot_bottom() - plot_top()) / std::max(1, y_decades) < 18 ? 2 : 1;
  for (int e = static_cast<int>(x0_); e <= static_cast<int>(x1_); ++e) {
    const std::string X = svg_num(px(std::pow(10.0, e)));
    grid += "<line class=\"grid\" x1=\"" + X + "\" x2=\"" + X + "\" y1=\"" + svg_num(plot_top()) + "\" y2=\"" +
            svg_num(plot_bottom()) + "\"/>";
    if ((e - static_cast<int>(x0_)) % x_step == 0)
      labels += "<text class=\"tick\" x=\"" + X + "\" y=\"" + svg_num(plot_bottom() + 16) +
                "\" text-anchor=\"middle\">" + html_escape(tick_text(e, x)) + "</text>";
    for (int m = 2; m <= 9 && e < static_cast<int>(x1_); ++m) {
      const std::string MX = svg_num(px(m * std::pow(10.0, e)));
      ticks += "<line class=\"minor\" x1=\"" + MX + "\" x2=\"" + MX + "\" y1=\"" + svg_num(plot_bottom()) +
               "\" y2=\"" + svg_num(plot_bottom() - 4) + "\"/>";
    }
  }
  for (int e = static_cast<int>(y0_); e <= static_cast<int>(y1_); ++e) {
    const std::string Y = svg_num(py(std::pow(10.0, e)));
    grid += "<line class=\"grid\" x1=\"" + svg_num(plot_left()) + "\" x2=\"" + svg_num(plot_right()) + "\" y1=\"" +
            Y + "\" y2=\"" + Y + "\"/>";
    if ((e - static_cast<int>(y0_)) % y_step == 0)
      labels += "<text class=\"tick\" x=\"" + svg_num(plot_left() - 6) + "\" y=\"" + svg_num(py(std::pow(10.0, e)) + 4) +
                "\" text-anchor=\"end\">" + html_escape(tick_text(e, y)) + "</text>";
    for (int m = 2; m <= 9 && e < static_cast<int>(y1_); ++m) {
      const std::string MY = svg_num(py(m * std::pow(10.0, e)));
      ticks += "<line class=\"minor\" x1=\"" + svg_num(plot_left()) + "\" x2=\"" + svg_num(plot_left() + 4) +
               "\" y1=\"" + MY + "\" y2=\"" + MY + "\"/>";
    }
  }
  std::string out = "<g class=\"axes\">" + grid + ticks + "\n";
  out += "<rect class=\"frame\" x=\"" + svg_num(plot_left()) + "\" y=\"" + svg_num(plot_top()) + "\" width=\"" +
         svg_num(plot_right() - plot_left()) + "\" height=\"" + svg_num(plot_bottom() - plot_top()) + "\"/>\n";
  out += labels + "\n";
  out += "<text class=\"axis-title\" x=\"" + svg_num((plot_left() + plot_right()) / 2) + "\" y=\"" +
         svg_num(box_.height - 8) + "\" text-anchor=\"middle\">" + html_escape(x.title) + "</text>";
  const double mid_y = (plot_top() + plot_bottom()) / 2;
  out += "<text class=\"axis-title\" x=\"14\" y=\"" + svg_num(mid_y) + "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " +
         svg_num(mid_y) + ")\">" + html_escape(y.title) + "</text></g>\n";
  return out;
}

std::string LogLogChart::polyline(const std::vector<std::pair<double, double>>& points,
                                  const std::string& attributes) const {
  if (points.size() < 2) return "";
  std::string coords;
  for (const auto& [x, y] : points) {
    if (!coords.empty()) coords += ' ';
    coords += svg_num(px(x)) + ',' + svg_num(py(y));
  }
  return "<polyline points=\"" + coords + "\" fill=\"none\" " + attributes + "/>\n";
}

std::string LogLogChart::right_labels(std::vector<Label> labels) const {
  constexpr double kGap = 12;
  std::sort(labels.begin(), labels.end(), [](const Label& a, const Label& b) { return a.y < b.y; });
  // Push down past the one above, then, if the last ran off the bottom, push back up.
  for (size_t i = 0; i < labels.size(); ++i) {
    labels[i].y = std::max(labels[i].y, plot_top() + 4);
    if (i > 0) labels[i].y = std::max(labels[i].y, labels[i - 1].y + kGap);
  }
  for (size_t i = labels.size(); i-- > 0;) {
    const double limit = i + 1 < labels.size() ? labels[i + 1].y - kGap : plot_bottom();
    labels[i].y = std::min(labels[i].y, limit);
  }
  std::string out;
  for (const auto& label : labels)
    out += "<text class=\"" + label.css_class + "\" x=\"" + svg_num(plot_right() + 6) + "\" y=\"" +
           svg_num(label.y + 4) + "\">" + html_escape(label.text) + "</text>\n";
  return out;
}

}  // namespace dnnb::report
