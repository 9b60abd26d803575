// `dnnblocks inspect FILE.gguf [--json]`: validate a GGUF file (core/gguf.h) and print its
// header, its metadata (every value type; arrays up to kShownElements elements) and each
// tensor: name, ggml type, dims as written and the row-major shape, byte range in the data
// section, and for the types the suite decodes (f32, f16, bf16, f64, the integers, q8_0,
// q4_0) min/max/mean/NaN count; other ggml types are named and sized.
#include "core/cli/inspect_gguf.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cli/inspect_common.h"
#include "core/gguf.h"
#include "core/gguf_types.h"
#include "core/safetensors_header.h"  // quoted_for_message

namespace dnnb::cli {

namespace {

// Array values are printed up to this many elements (a vocabulary holds 10^5 strings).
constexpr uint64_t kShownElements = 16;    // text
constexpr uint64_t kJsonElements = 1024;   // --json

TensorStats compute_stats(const GgufTensorInfo& info) {
  TensorStats stats;
  for (uint64_t i = 0; i < info.numel; ++i) stats.add(ggml_load_value(info.data, info.type, i));
  return stats;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

std::string row_major_text(const std::vector<uint64_t>& dims) {
  if (dims.empty()) return "scalar";
  std::string out;
  for (size_t i = dims.size(); i-- > 0;) out += std::to_string(dims[i]) + (i ? "x" : "");
  return out;
}

std::string type_text(const GgufKeyValue& kv) {
  return kv.is_array ? std::string("arr[") + gguf_type_name(kv.type) + "]" : gguf_type_name(kv.type);
}

bool is_float(GgufType type) { return type == GgufType::f32 || type == GgufType::f64; }
bool is_signed(GgufType type) {
  return type == GgufType::i8 || type == GgufType::i16 || type == GgufType::i32 ||
         type == GgufType::i64;
}

std::string element_text(const GgufFile& file, const GgufKeyValue& kv, uint64_t i) {
  if (kv.type == GgufType::string) return quoted_for_message(file.string(kv, i));
  if (kv.type == GgufType::boolean) return file.as_int64(kv, i) ? "true" : "false";
  if (is_float(kv.type)) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", file.number(kv, i));
    return text;
  }
  return is_signed(kv.type) ? std::to_string(file.as_int64(kv, i))
                            : std::to_string(file.as_uint64(kv, i));
}

nlohmann::json element_json(const GgufFile& file, const GgufKeyValue& kv, uint64_t i) {
  if (kv.type == GgufType::string) return file.string(kv, i);
  if (kv.type == GgufType::boolean) return file.as_int64(kv, i) != 0;
  if (is_float(kv.type)) {
    const double v = file.number(kv, i);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
  }
  if (is_signed(kv.type)) return file.as_int64(kv, i);
  return file.as_uint64(kv, i);
}

std::string value_text(const GgufFile& file, const GgufKeyValue& kv) {
  if (!kv.is_array) return element_text(file, kv, 0);
  std::string out = "[";
  const uint64_t shown = std::min(kv.count, kShownElements);
  for (uint64_t i = 0; i < shown; ++i) out += (i ? ", " : "") + element_text(file, kv, i);
  if (shown < kv.count) out += ", ... " + std::to_string(kv.count - shown) + " more";
  return out + "]";
}

nlohmann::json report_json(const GgufFile& file) {
  nlohmann::json report = {{"file", file.path()},
                           {"format", "gguf"},
                           {"version", file.version()},
                           {"alignment", file.alignment()},
                           {"data_offset", file.data_offset()},
                           {"metadata", nlohmann::json::array()},
                           {"tensors", nlohmann::json::array()}};
  for (const auto& kv : file.metadata()) {
    nlohmann::json item = {{"key", kv.key}, {"type", type_text(kv)}};
    if (kv.is_array) {
      nlohmann::json values = nlohmann::json::array();
      for (uint64_t i = 0; i < std::min(kv.count, kJsonElements); ++i)
        values.push_back(element_json(file, kv, i));
      item["count"] = kv.count;
      item["value"] = std::move(values);
      item["truncated"] = kv.count > kJsonElements;
    } else {
      item["value"] = element_json(file, kv, 0);
    }
    report["metadata"].push_back(std::move(item));
  }
  for (const auto& info : file.tensors()) {
    const GgmlTypeInfo* type = ggml_type_info(info.type);
    nlohmann::json shape = nlohmann::json::array();
    for (size_t i = info.dims.size(); i-- > 0;) shape.push_back(info.dims[i]);
    nlohmann::json item = {{"name", info.name},
                           {"type", type->name},
                           {"type_id", info.type},
                           {"dims", info.dims},
                           {"shape", std::move(shape)},
                           {"numel", info.numel},
                           {"bytes", info.bytes},
                           {"data_offsets", {info.offset, info.offset + info.bytes}}};
    if (ggml_decodable(info.type)) {
      const TensorStats stats = compute_stats(info);
      item["stats"] = {{"min", stat_json(stats.min, stats)},
                       {"max", stat_json(stats.max, stats)},
                       {"mean", stat_json(stats.mean(), stats)},
                       {"nan_count", stats.nan_count}};
    } else {
      item["stats"] = nullptr;
      item["stats_note"] = std::string("values not decoded: the suite has no decoder for ") + type->name;
    }
    report["tensors"].push_back(std::move(item));
  }
  return report;
}

void print_text(const GgufFile& file) {
  std::printf("%s: GGUF v%u, %zu tensors, %zu metadata entries, alignment %" PRIu64
              ", data at byte %" PRIu64 "\n",
              printable(file.path()).c_str(), file.version(), file.tensors().size(),
              file.metadata().size(), file.alignment(), file.data_offset());
  for (const auto& info : file.tensors()) {
    const GgmlTypeInfo* type = ggml_type_info(info.type);
    std::printf("  %s  %s  dims %s (row-major %s)  bytes [%" PRIu64 ", %" PRIu64 ")",
                printable(info.name).c_str(), type->name, dims_text(info.dims).c_str(),
                row_major_text(info.dims).c_str(), info.offset, info.offset + info.bytes);
    if (!ggml_decodable(info.type)) {
      std::printf("  values not decoded (%u values in %u-byte blocks)\n", type->block_values,
                  type->block_bytes);
      continue;
    }
    const TensorStats stats = compute_stats(info);
    const bool integer = info.type == 24 || info.type == 25 || info.type == 26 || info.type == 27;
    if (stats.count > 0 && integer)  // integers print whole (exact up to 2^53)
      std::printf("  min=%.17g max=%.17g mean=%.9g", stats.min, stats.max, stats.mean());
    else if (stats.count > 0)
      std::printf("  min=%.9g max=%.9g mean=%.9g", stats.min, stats.max, stats.mean());
    else
      std::printf("  min=- max=- mean=-");
    std::printf(" nan=%" PRId64 "\n", stats.nan_count);
  }
  if (!file.metadata().empty()) {
    std::printf("metadata:\n");
    for (const auto& kv : file.metadata()) {
      std::printf("  %s (%s", printable(kv.key).c_str(), type_text(kv).c_str());
      if (kv.is_array) std::printf(", %" PRIu64 " elements", kv.count);
      // Strings are JSON-quoted (escaped, cut after 80 bytes); the rest has no control bytes.
      std::printf(") = %s\n", value_text(file, kv).c_str());
    }
  }
}

}  // namespace

bool read_as_gguf(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  uint8_t head[9] = {};
  const size_t got = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (GgufFile::has_magic(head, got)) return true;
  const bool gguf_name = path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
  // A safetensors header is JSON: '{', or whitespace before it.
  const bool safetensors_start =
      got == sizeof head && std::strchr("{ \t\r\n", static_cast<char>(head[8])) != nullptr && head[8] != 0;
  return gguf_name && !safetensors_start;
}

int inspect_gguf_file(const std::string& path, bool as_json) {
  auto opened = GgufFile::open(path);
  if (!opened) {
    std::fprintf(stderr, "dnnblocks inspect: %s\n", opened.status().message.c_str());
    return opened.status().code == StatusCode::bad_input ? 2 : 3;
  }
  const GgufFile& file = **opened;
  if (as_json) {
    // Keys and names were validated as UTF-8; string values are not (ggml does not), so
    // invalid bytes become U+FFFD here.
    const auto text = report_json(file).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
  } else {
    print_text(file);
  }
  return 0;
}

}  // namespace dnnb::cli
