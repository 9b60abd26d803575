// What `dnnblocks inspect` prints for every file format (safetensors, GGUF): running
// statistics of a tensor's values, their JSON form, and names from the file made safe for a
// terminal.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace dnnb::cli {

struct TensorStats {
  int64_t count = 0;      // elements that are not NaN
  int64_t nan_count = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  double mean() const { return count > 0 ? sum / static_cast<double>(count) : std::nan(""); }
  void add(double v) {
    if (std::isnan(v)) {
      ++nan_count;
      return;
    }
    ++count;
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
  }
};

// Names and metadata come from the file: control bytes become '?' so they cannot drive
// the terminal (the JSON output escapes them instead).
inline std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return out;
}

// JSON has no NaN or Inf: those are written as strings, and absent statistics (a tensor
// with no non-NaN element) as null.
inline nlohmann::json stat_json(double v, const TensorStats& stats) {
  if (stats.count == 0) return nullptr;
  if (std::isnan(v)) return "nan";  // the mean of +Inf and -Inf
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

}  // namespace dnnb::cli
