// `dnnblocks inspect FILE [--json]`: a file starting with GGUF's magic goes to
// inspect_gguf.cpp (read_as_gguf), any other is read as safetensors. For safetensors: validate the file and
// print each tensor (name, dtype, shape, byte range, min/max/mean/NaN count) and the metadata. Every
// dtype the format defines is decoded (C64 as real and imaginary parts) except the F6
// formats, whose packing the format leaves open: those say so instead of statistics.
// A file that breaks a rule prints the rule on stderr and exits 2.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cli/commands.h"
#include "core/cli/inspect_common.h"
#include "core/cli/inspect_gguf.h"
#include "core/safetensors.h"
#include "core/safetensors_dtype.h"

namespace dnnb::cli {

namespace {

// Statistics of value `part` of each element (C64: 0 real, 1 imaginary), read straight over
// the mapped bytes: decoding reads through memcpy, so a tensor at an unaligned offset (legal
// in the format) needs no copy.
TensorStats compute_stats(const SafetensorsEntry& entry, unsigned part) {
  const unsigned per_element = safetensors_values_per_element(entry.file_dtype);
  TensorStats stats;
  for (uint64_t i = 0; i < entry.numel; ++i) {
    stats.add(decode_safetensors_value(entry.data, entry.file_dtype, i * per_element + part));
  }
  return stats;
}

constexpr const char* kNotDecoded =
    "values not decoded: the format does not define how 6-bit elements are packed into bytes";

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

int inspect_file(const std::string& path, bool as_json) {
  // The format is the file's content (GGUF's magic), not its name (inspect_gguf.h).
  if (read_as_gguf(path)) return inspect_gguf_file(path, as_json);
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
    const bool decodable = safetensors_decodable(entry.file_dtype);
    const bool complex = safetensors_values_per_element(entry.file_dtype) == 2;
    std::vector<TensorStats> parts;  // one, or real and imaginary
    if (decodable) parts.push_back(compute_stats(entry, 0));
    if (decodable && complex) parts.push_back(compute_stats(entry, 1));
    if (as_json) {
      auto stats_json = [](const TensorStats& stats) {
        return nlohmann::json{{"min", stat_json(stats.min, stats)},
                              {"max", stat_json(stats.max, stats)},
                              {"mean", stat_json(stats.mean(), stats)},
                              {"nan_count", stats.nan_count}};
      };
      nlohmann::json item = {{"name", entry.name},
                             {"dtype", safetensors_name(entry.file_dtype)},
                             {"shape", entry.file_shape},
                             {"numel", entry.numel},
                             {"data_offsets", {entry.begin, entry.end}}};
      if (!decodable) {
        item["stats"] = nullptr;
        item["stats_note"] = kNotDecoded;
      } else if (complex) {
        item["stats"] = {{"real", stats_json(parts[0])}, {"imag", stats_json(parts[1])}};
      } else {
        item["stats"] = stats_json(parts[0]);
      }
      report["tensors"].push_back(std::move(item));
      continue;
    }
    std::printf("  %s  %s  %s  bytes [%" PRIu64 ", %" PRIu64 ")", printable(entry.name).c_str(),
                safetensors_name(entry.file_dtype), shape_text(entry.file_shape).c_str(),
                entry.begin, entry.end);
    if (!decodable) std::printf("  %s", kNotDecoded);
    for (size_t p = 0; p < parts.size(); ++p) {
      const TensorStats& stats = parts[p];
      if (complex) std::printf("  %s:", p == 0 ? "real" : "imag");
      if (stats.count > 0 && safetensors_floating(entry.file_dtype))
        std::printf("  min=%.9g max=%.9g mean=%.9g", stats.min, stats.max, stats.mean());
      else if (stats.count > 0)  // integers print whole (exact up to 2^53)
        std::printf("  min=%.17g max=%.17g mean=%.9g", stats.min, stats.max, stats.mean());
      else
        std::printf("  min=- max=- mean=-");
      std::printf(" nan=%" PRId64, stats.nan_count);
    }
    std::printf("\n");
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
      "inspect", "Validate a .safetensors or GGUF file and print its tensors, statistics and metadata");
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  command->add_option("file", *path, "The .safetensors or .gguf file")->required();
  command->add_flag("--json", *as_json, "Print the report as JSON");
  command->callback([path, as_json, &exit_code] { exit_code = inspect_file(*path, *as_json); });
}

}  // namespace dnnb::cli
