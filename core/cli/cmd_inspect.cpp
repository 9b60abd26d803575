// `dnnblocks inspect FILE.safetensors [--json]`: validate a safetensors file and print each
// tensor (name, dtype, shape, byte range, min/max/mean/NaN count) and the metadata.
// A file that breaks a rule prints the rule on stderr and exits 2.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cli/commands.h"
#include "core/safetensors.h"

namespace dnnb::cli {

namespace {

struct TensorStats {
  int64_t count = 0;      // elements that are not NaN
  int64_t nan_count = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  double mean() const { return count > 0 ? sum / static_cast<double>(count) : std::nan(""); }
};

TensorStats compute_stats(const void* data, DType dtype, int64_t numel) {
  TensorStats stats;
  for (int64_t i = 0; i < numel; ++i) {
    const double v = load_element(data, dtype, i);
    if (std::isnan(v)) {
      ++stats.nan_count;
      continue;
    }
    ++stats.count;
    stats.min = std::min(stats.min, v);
    stats.max = std::max(stats.max, v);
    stats.sum += v;
  }
  return stats;
}

// Names and metadata come from the file: control bytes become '?' so they cannot drive
// the terminal (the JSON output escapes them instead).
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return out;
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// JSON has no NaN or Inf: those are written as strings, and absent statistics (a tensor
// with no non-NaN element) as null.
nlohmann::json stat_json(double v, const TensorStats& stats) {
  if (stats.count == 0) return nullptr;
  if (std::isnan(v)) return "nan";  // the mean of +Inf and -Inf
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

int inspect_file(const std::string& path, bool as_json) {
  auto opened = SafetensorsFile::open(path);
  if (!opened) {
    std::fprintf(stderr, "dnnblocks inspect: %s\n", opened.status().message.c_str());
    return opened.status().code == StatusCode::bad_input ? 2 : 3;
  }
  const SafetensorsFile& file = **opened;

  nlohmann::json report = {{"file", path}, {"tensors", nlohmann::json::array()}};
  if (!as_json)
    std::printf("%s: %zu tensors, %zu metadata entries\n", printable(path).c_str(),
                file.entries().size(), file.metadata().size());
  for (const auto& entry : file.entries()) {
    // Straight over the mapped bytes: load_element reads through memcpy, so a tensor at an
    // unaligned offset (legal in the format) needs no copy.
    const int64_t numel = shape_numel(entry.shape);
    const TensorStats stats = compute_stats(entry.data, entry.dtype, numel);
    if (as_json) {
      nlohmann::json stats_json = {{"min", stat_json(stats.min, stats)},
                                   {"max", stat_json(stats.max, stats)},
                                   {"mean", stat_json(stats.mean(), stats)},
                                   {"nan_count", stats.nan_count}};
      report["tensors"].push_back({{"name", entry.name},
                                   {"dtype", safetensors_dtype_name(entry.dtype)},
                                   {"shape", entry.shape},
                                   {"numel", numel},
                                   {"data_offsets", {entry.begin, entry.end}},
                                   {"stats", std::move(stats_json)}});
      continue;
    }
    std::printf("  %s  %s  %s  bytes [%" PRIu64 ", %" PRIu64 ")", printable(entry.name).c_str(),
                safetensors_dtype_name(entry.dtype), shape_text(entry.shape).c_str(), entry.begin,
                entry.end);
    if (stats.count > 0 && is_floating(entry.dtype))
      std::printf("  min=%.9g max=%.9g mean=%.9g", stats.min, stats.max, stats.mean());
    else if (stats.count > 0)  // integers print whole (exact up to 2^53)
      std::printf("  min=%.17g max=%.17g mean=%.9g", stats.min, stats.max, stats.mean());
    else
      std::printf("  min=- max=- mean=-");
    std::printf(" nan=%" PRId64 "\n", stats.nan_count);
  }
  if (as_json) {
    report["metadata"] = file.metadata();
    // Names and metadata were validated as UTF-8 by the reader; replace is belt and braces.
    const auto text = report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
    return 0;
  }
  if (!file.metadata().empty()) {
    std::printf("metadata:\n");
    for (const auto& [key, value] : file.metadata())
      std::printf("  %s = %s\n", printable(key).c_str(), printable(value).c_str());
  }
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto* command = app.add_subcommand(
      "inspect", "Validate a .safetensors file and print its tensors, statistics and metadata");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  command->add_option("file", *path, "The .safetensors file")->required();
  command->add_flag("--json", *as_json, "Print the report as JSON");
  command->callback([path, as_json, &exit_code] { exit_code = inspect_file(*path, *as_json); });
}

}  // namespace dnnb::cli
