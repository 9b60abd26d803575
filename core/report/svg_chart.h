// A small SVG writer for log-log charts: decade axes with labels and minor ticks, clipped lines
// in data coordinates, labels kept apart, and the colours and marks that say backend and
// dtype. roofline_chart.cpp and sweep_chart.cpp draw with it. Every text it is given is
// escaped here; callers pass raw strings.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace dnnb::report {

// Colour of a backend, the same in every chart, table and legend of the page.
std::string backend_color(const std::string& backend);
// The mark of a dtype on a circle: fill, stroke and dash attributes (f32 filled, bf16 ring,
// f16 tinted, others dashed), given the backend's colour.
std::string dtype_mark_attributes(const std::string& dtype, const std::string& color);
// A 14x14 inline SVG of that mark, for legends.
std::string dtype_swatch(const std::string& dtype, const std::string& color);

enum class TickStyle { plain, si };  // plain: 0.01, 1, 100; si: 10 k, 1 M (with the unit)

struct Axis {
  std::string title;   // "FLOP/s (log)"
  std::string unit;    // for si tick labels: "B", "s", "" (prefix only)
  TickStyle style = TickStyle::si;
};

struct Label {
  double y;  // wanted position (pixels); moved to keep labels apart
  std::string text;
  std::string css_class;
};

class LogLogChart {
 public:
  struct Box {
    int width, height, left, right, top, bottom;  // overall size and margins, pixels
  };
  explicit LogLogChart(Box box) : box_(box) {}

  // The domain spans whole decades around [lo, hi] on each axis, at least `min_decades` and at
  // most kMaxDecades wide (keeping the top: hostile values cannot make a chart of 300 decades).
  void set_domain(double x_lo, double x_hi, double y_lo, double y_hi, int min_decades);
  double x_min() const { return pow10_(x0_); }
  double x_max() const { return pow10_(x1_); }
  double y_min() const { return pow10_(y0_); }
  double y_max() const { return pow10_(y1_); }
  // Pixel position of a data value, clamped to the plot area.
  double px(double x) const;
  double py(double y) const;
  double plot_left() const { return box_.left; }
  double plot_right() const { return box_.width - box_.right; }
  double plot_top() const { return box_.top; }
  double plot_bottom() const { return box_.height - box_.bottom; }
  // Angle (degrees, SVG rotation) of a line y = c * x^slope drawn on this chart.
  double angle_of_slope(double slope) const;

  std::string open(const std::string& aria_label) const;  // <svg ...> and the frame
  std::string axes(const Axis& x, const Axis& y) const;   // grid, ticks, labels, titles
  std::string close() const { return "</svg>\n"; }

  // A polyline through data points (any outside the domain are clamped).
  std::string polyline(const std::vector<std::pair<double, double>>& points, const std::string& attributes) const;
  // Right-hand labels, spread so that none overlaps (min gap 12 px), inside the plot's height.
  std::string right_labels(std::vector<Label> labels) const;

 private:
  static double pow10_(double e);
  Box box_;
  double x0_ = -2, x1_ = 2, y0_ = 0, y1_ = 4;  // log10 of the domain
  static constexpr int kMaxDecades = 14;
};

// SVG number: one decimal, no exponent.
std::string svg_num(double v);

}  // namespace dnnb::report
