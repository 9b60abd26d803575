// safetensors reader and writer. Format: 8-byte little-endian header length N, N bytes of
// UTF-8 JSON (an object: tensor name -> {dtype, shape, data_offsets}, plus an optional
// "__metadata__" object of strings), then the data section. Files are untrusted: every
// check below names its rule so a failure says exactly what is wrong with the file.
#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace dnnb {

namespace {

using nlohmann::json;

// The reference implementation's limit: bigger headers are refused before parsing.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A valid header nests three deep (object -> tensor object -> shape array); anything much
// deeper is hostile, and refusing it early keeps a 100 MB "[[[[..." from building a huge DOM.
constexpr int kMaxJsonDepth = 8;
constexpr const char* kMetadataKey = "__metadata__";

// "an array", "a number": the JSON type of a value, for messages.
std::string a_type(const json& value) {
  const std::string name = value.type_name();
  return (name[0] == 'a' || name[0] == 'o' ? "an " : "a ") + name;
}

Status rule_error(const std::string& label, const std::string& what, const char* rule) {
  return Status::bad_input(label + ": " + what + " (rule: " + rule + ")");
}

// Names come from the file: quote them with JSON escapes (no control bytes reach a terminal)
// and cut very long ones.
std::string quoted(const std::string& text) {
  constexpr size_t kMaxShown = 80;
  std::string shown = text.size() > kMaxShown ? text.substr(0, kMaxShown) : text;
  std::string out = json(shown).dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxShown) out += "...";
  return out;
}

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
// Returns the offset of the first bad byte, or `size` when all is well.
size_t first_invalid_utf8(const uint8_t* p, size_t size) {
  size_t i = 0;
  while (i < size) {
    const uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t extra = 0;
    uint32_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
      extra = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      extra = 2;
      if (b == 0xE0) lo = 0xA0;  // overlong
      if (b == 0xED) hi = 0x9F;  // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      extra = 3;
      if (b == 0xF0) lo = 0x90;  // overlong
      if (b == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (size - i <= extra) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k <= extra; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    i += extra + 1;
  }
  return size;
}

bool valid_utf8(const std::string& s) {
  return first_invalid_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size()) == s.size();
}

// Thrown from the parse callback to stop parsing at the first structural rule broken;
// nlohmann::json keeps only one of two equal keys, so duplicates are caught while parsing.
struct HeaderAbort {
  std::string what;
  const char* rule;
};

Result<json> parse_header(const uint8_t* text, size_t size, const std::string& label) {
  const size_t bad = first_invalid_utf8(text, size);
  if (bad != size)
    return rule_error(label, "header is not valid UTF-8 at header byte " + std::to_string(bad),
                      "header-utf8");
  std::vector<std::set<std::string>> keys_per_object;  // one set per open object
  json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw HeaderAbort{"header JSON nests deeper than " + std::to_string(kMaxJsonDepth),
                            "header-depth"};
        if (event == json::parse_event_t::object_start) keys_per_object.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys_per_object.empty()) keys_per_object.pop_back();
        break;
      case json::parse_event_t::key: {
        if (keys_per_object.empty() || !parsed.is_string()) break;
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys_per_object.back().insert(key).second) {
          if (keys_per_object.size() == 1)
            throw HeaderAbort{"name " + quoted(key) + " appears twice in the header",
                              "duplicate-name"};
          throw HeaderAbort{"key " + quoted(key) + " appears twice in one object", "duplicate-key"};
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    json header = json::parse(text, text + size, callback, /*allow_exceptions=*/true,
                              /*ignore_comments=*/false);
    if (!header.is_object())
      return rule_error(label, "header JSON is " + a_type(header) + ", not an object",
                        "header-object");
    return header;
  } catch (const HeaderAbort& abort) {
    return rule_error(label, abort.what, abort.rule);
  } catch (const json::exception& e) {
    return rule_error(label, std::string("header is not valid JSON: ") + e.what(), "header-json");
  }
}

Status parse_metadata(const json& value, const std::string& label,
                      std::map<std::string, std::string>& metadata) {
  if (!value.is_object())
    return rule_error(label, "__metadata__ is " + a_type(value) + ", not an object",
                      "metadata");
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      return rule_error(label, "__metadata__ value of " + quoted(key) + " is " +
                                   a_type(item) + ", not a string",
                        "metadata");
    metadata[key] = item.get<std::string>();
  }
  return Status::ok();
}

// One tensor's description, checked on its own (the layout across tensors comes after).
Status parse_entry(const std::string& name, const json& value, uint64_t data_size,
                   const std::string& label, SafetensorsEntry& entry) {
  const std::string who = "tensor " + quoted(name);
  if (!value.is_object())
    return rule_error(label, who + " is " + a_type(value) + ", not an object",
                      "tensor-entry");
  // Other fields are ignored, as the reference reader ignores them.
  entry.name = name;

  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string())
    return rule_error(label, who + " has no string \"dtype\"", "dtype");
  const auto& dtype_text = dtype_it->get_ref<const std::string&>();
  auto dtype = dtype_from_safetensors(dtype_text);
  if (!dtype)
    return rule_error(label, who + " has unknown dtype " + quoted(dtype_text) +
                                 " (names are case-sensitive: F32, BF16, F8_E4M3, ...)",
                      "dtype");
  entry.dtype = *dtype;

  auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array())
    return rule_error(label, who + " has no \"shape\" array", "shape");
  constexpr uint64_t kMaxDim = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (const auto& dim : *shape_it) {
    // nlohmann stores every non-negative integer literal as number_unsigned.
    if (!dim.is_number_unsigned())
      return rule_error(label, who + " shape has " + dim.dump() + ", not a non-negative integer",
                        "shape");
    const uint64_t d = dim.get<uint64_t>();
    if (d > kMaxDim)
      return rule_error(label, who + " shape dimension " + std::to_string(d) +
                                   " does not fit in int64",
                        "size-overflow");
    entry.shape.push_back(static_cast<int64_t>(d));
  }

  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned())
    return rule_error(label, who + " needs \"data_offsets\": [begin, end] of non-negative integers",
                      "data-offsets");
  entry.begin = (*offsets_it)[0].get<uint64_t>();
  entry.end = (*offsets_it)[1].get<uint64_t>();
  if (entry.begin > entry.end)
    return rule_error(label, who + " data_offsets begin " + std::to_string(entry.begin) +
                                 " > end " + std::to_string(entry.end),
                      "data-offsets");

  // Left to right with overflow checks, as the reference does: a later 0 does not excuse
  // an overflowing product (and shape_numel multiplies in the same order).
  int64_t numel = 1;
  for (int64_t d : entry.shape)
    if (__builtin_mul_overflow(numel, d, &numel))
      return rule_error(label, who + " element count of shape " + shape_to_string(entry.shape) +
                                   " overflows int64",
                        "size-overflow");
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype_size(entry.dtype), &bytes))
    return rule_error(label, who + " byte size overflows uint64", "size-overflow");
  if (bytes != entry.end - entry.begin)
    return rule_error(label, who + " " + safetensors_dtype_name(entry.dtype) + " shape [" +
                                 shape_to_string(entry.shape) + "] needs " +
                                 std::to_string(bytes) + " bytes but data_offsets [" +
                                 std::to_string(entry.begin) + ", " + std::to_string(entry.end) +
                                 ") hold " + std::to_string(entry.end - entry.begin),
                      "shape-size");
  if (entry.end > data_size)
    return rule_error(label, who + " data_offsets end " + std::to_string(entry.end) +
                                 " is past the data section of " + std::to_string(data_size) +
                                 " bytes",
                      "data-bounds");
  return Status::ok();
}

struct ParsedFile {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

Result<ParsedFile> parse_file(const uint8_t* base, size_t size, const std::string& label) {
  if (size < 8)
    return rule_error(label, "file has " + std::to_string(size) +
                                 " bytes, fewer than the 8-byte header length",
                      "file-size");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | base[i];
  if (header_size > kMaxHeaderBytes)
    return rule_error(label, "header length " + std::to_string(header_size) + " exceeds " +
                                 std::to_string(kMaxHeaderBytes),
                      "header-length");
  if (8 + header_size > size)
    return rule_error(label, "header length " + std::to_string(header_size) +
                                 " runs past the end of the " + std::to_string(size) +
                                 "-byte file",
                      "header-bounds");
  auto header = parse_header(base + 8, static_cast<size_t>(header_size), label);
  if (!header) return header.status();

  const uint8_t* data = base + 8 + header_size;
  const uint64_t data_size = size - 8 - header_size;
  ParsedFile parsed;
  for (const auto& [key, value] : header->items()) {
    if (key == kMetadataKey) {
      DNNB_TRY(parse_metadata(value, label, parsed.metadata));
      continue;
    }
    SafetensorsEntry entry;
    DNNB_TRY(parse_entry(key, value, data_size, label, entry));
    entry.data = data + entry.begin;
    parsed.entries.push_back(std::move(entry));
  }

  // File order is data order; zero-byte ranges sort before a range starting at the same byte.
  std::sort(parsed.entries.begin(), parsed.entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
            });
  uint64_t covered = 0;  // the ranges so far tile [0, covered)
  for (const auto& entry : parsed.entries) {
    if (entry.begin > covered)
      return rule_error(label, "bytes [" + std::to_string(covered) + ", " +
                                   std::to_string(entry.begin) + ") before tensor " +
                                   quoted(entry.name) + " belong to no tensor",
                        "hole");
    if (entry.begin < covered)
      return rule_error(label, "tensor " + quoted(entry.name) + " starts at byte " +
                                   std::to_string(entry.begin) +
                                   " inside the previous tensor, which ends at " +
                                   std::to_string(covered),
                        "overlap");
    covered = entry.end;
  }
  if (covered != data_size)
    return rule_error(label, "tensors end at data byte " + std::to_string(covered) + " but the " +
                                 "data section has " + std::to_string(data_size) + " bytes",
                      "trailing-bytes");
  return parsed;
}

}  // namespace

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::bad_input(path + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const std::string why = S_ISDIR(info.st_mode) ? "is a directory" : "not a regular file";
    ::close(fd);
    return Status::bad_input(path + ": cannot read: " + why);
  }
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(info.st_size);
  if (file->size_ > 0) {
    void* mapping = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int mmap_errno = errno;
    ::close(fd);
    if (mapping == MAP_FAILED)
      return Status::error(path + ": mmap of " + std::to_string(file->size_) +
                           " bytes failed: " + std::strerror(mmap_errno));
    file->mapping_ = mapping;
    file->base_ = static_cast<const uint8_t*>(mapping);
  } else {
    ::close(fd);  // mmap refuses length 0; parse_file reports the file as too short
  }
  auto parsed = parse_file(file->base_, file->size_, path);
  if (!parsed) return parsed.status();
  file->entries_ = std::move(parsed->entries);
  file->metadata_ = std::move(parsed->metadata);
  return file;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::from_bytes(std::vector<uint8_t> bytes,
                                                                     const std::string& label) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = label;
  file->owned_ = std::move(bytes);
  file->base_ = file->owned_.data();
  file->size_ = file->owned_.size();
  auto parsed = parse_file(file->base_, file->size_, label);
  if (!parsed) return parsed.status();
  file->entries_ = std::move(parsed->entries);
  file->metadata_ = std::move(parsed->metadata);
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry.name == name) return &entry;
  return nullptr;
}

Result<Tensor> SafetensorsFile::load(std::string_view name, DeviceRuntime& host) const {
  const SafetensorsEntry* entry = find(name);
  if (entry == nullptr)
    return Status::bad_input(path_ + ": no tensor named " + quoted(std::string(name)));
  auto tensor = empty_tensor(host, entry->dtype, entry->shape);
  if (!tensor) return tensor.status();
  const size_t bytes = static_cast<size_t>(entry->end - entry->begin);
  if (bytes > 0) DNNB_TRY(host.upload(*tensor->buffer, 0, entry->data, bytes));
  return tensor;
}

Status SafetensorsWriter::add(const std::string& name, const Tensor& tensor) {
  if (name == kMetadataKey)
    return Status::bad_input("safetensors writer: \"__metadata__\" is reserved, not a tensor name");
  if (!valid_utf8(name))
    return Status::bad_input("safetensors writer: tensor name " + quoted(name) +
                             " is not valid UTF-8");
  for (const auto& item : items_)
    if (item.name == name)
      return Status::bad_input("safetensors writer: tensor " + quoted(name) + " added twice");
  auto host = to_host(tensor);
  if (!host) return host.status();
  Item item{name, tensor.dtype, tensor.shape, {}};
  item.bytes.resize(static_cast<size_t>(host->numel()) * host->element_size());
  if (!item.bytes.empty()) std::memcpy(item.bytes.data(), host->host_data(), item.bytes.size());
  items_.push_back(std::move(item));
  return Status::ok();
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

Result<std::vector<uint8_t>> SafetensorsWriter::to_bytes() const {
  // nlohmann::json objects are std::maps, so dump() emits keys sorted: deterministic bytes.
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& item : items_) {
    json shape = json::array();
    for (int64_t d : item.shape) shape.push_back(d);
    header[item.name] = {{"dtype", safetensors_dtype_name(item.dtype)},
                         {"shape", std::move(shape)},
                         {"data_offsets", {offset, offset + item.bytes.size()}}};
    offset += item.bytes.size();
  }
  if (!metadata_.empty()) {
    for (const auto& [key, value] : metadata_)
      if (!valid_utf8(key) || !valid_utf8(value))
        return Status::bad_input("safetensors writer: metadata " + quoted(key) +
                                 " is not valid UTF-8");
    header[kMetadataKey] = metadata_;
  }
  std::string text = header.dump();
  // Pad with spaces to a multiple of 8 so the data section starts aligned, as the
  // reference writer does.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<uint8_t> out;
  out.reserve(8 + text.size() + offset);
  const uint64_t header_size = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(header_size >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& item : items_) out.insert(out.end(), item.bytes.begin(), item.bytes.end());
  return out;
}

Status SafetensorsWriter::write(const std::string& path) const {
  auto bytes = to_bytes();
  if (!bytes) return bytes.status();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::error(path + ": cannot create: " + std::strerror(errno));
  const size_t written = std::fwrite(bytes->data(), 1, bytes->size(), f);
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (written != bytes->size() || !closed)
    return Status::error(path + ": write failed: " + std::strerror(write_errno));
  return Status::ok();
}

}  // namespace dnnb
