// check's quantisation figures for quantising ops (OpSpec::quantizes_input): llama.cpp
// quantize-stats' RMSE, max error, median, 95th percentile and error histogram, from one case's
// decoded output against its input.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/check.h"

namespace dnnb {

QuantizeStats quantize_stats(const Tensor& decoded, const Tensor& source) {
  QuantizeStats s;
  s.histogram.assign(10, 0);
  const auto* d = static_cast<const double*>(decoded.host_data());
  std::vector<double> errors;
  errors.reserve(static_cast<size_t>(decoded.numel()));
  double sum_sq = 0;
  for (int64_t i = 0; i < decoded.numel(); ++i) {
    const double x = load_element(source.host_data(), source.dtype, i);
    if (!std::isfinite(x) || !std::isfinite(d[i])) {
      ++s.nonfinite;
      continue;
    }
    const double e = std::fabs(d[i] - x);
    errors.push_back(e);
    sum_sq += e * e;
    s.max_abs = std::max(s.max_abs, e);
  }
  s.count = static_cast<int64_t>(errors.size());
  if (errors.empty()) return s;
  s.rmse = std::sqrt(sum_sq / static_cast<double>(errors.size()));
  for (double e : errors) {
    const size_t bucket = s.max_abs > 0 ? static_cast<size_t>(e / s.max_abs * 10) : 0;
    ++s.histogram[std::min<size_t>(bucket, 9)];
  }
  auto at = [&errors](double q) {
    const size_t k = std::min(errors.size() - 1, static_cast<size_t>(q * static_cast<double>(errors.size())));
    std::nth_element(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(k), errors.end());
    return errors[k];
  };
  s.median = at(0.5);
  s.p95 = at(0.95);
  return s;
}

std::string quantize_stats_line(const QuantizeStats& s) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "rmse %.4g max %.4g median %.4g 95%% %.4g hist[0..%.3g]", s.rmse, s.max_abs,
                s.median, s.p95, s.max_abs);
  std::string line = buf;
  for (int64_t n : s.histogram) line += " " + std::to_string(n);
  line += " (" + std::to_string(s.count) + " values";
  if (s.nonfinite) line += ", " + std::to_string(s.nonfinite) + " non-finite left out";
  return line + ")";
}

}  // namespace dnnb
