// safetensors reader and writer. Format: 8-byte little-endian header length N, N bytes of
// UTF-8 JSON (an object: tensor name -> {dtype, shape, data_offsets}, plus an optional
// "__metadata__" object of strings; core/safetensors_header.cpp parses it), then the data
// section. Files are untrusted: every check names its rule so a failure says exactly what is
// wrong with the file.
#include "core/safetensors.h"

#include "core/safetensors_header.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>

#include <nlohmann/json.hpp>

namespace dnnb {

Status safetensors_rule_error(const std::string& label, const std::string& what,
                              const char* rule) {
  return Status::bad_input(label + ": " + what + " (rule: " + rule + ")");
}

std::string quoted_for_message(const std::string& text) {
  constexpr size_t kMaxShown = 80;
  const std::string shown = text.size() > kMaxShown ? text.substr(0, kMaxShown) : text;
  std::string out =
      nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > kMaxShown) out += "...";
  return out;
}

namespace {

using nlohmann::json;

// The reference implementation's limit: bigger headers are refused before parsing.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

Status rule_error(const std::string& label, const std::string& what, const char* rule) {
  return safetensors_rule_error(label, what, rule);
}

std::string quoted(const std::string& text) { return quoted_for_message(text); }

}  // namespace

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

namespace {

bool valid_utf8(const std::string& s) {
  return first_invalid_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size()) == s.size();
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

// One tensor's byte range against its dtype and shape, with the reference's arithmetic:
// the element count multiplies left to right in 64 bits and must never overflow (a later 0
// does not excuse an overflowing product), and count x bits must be whole bytes.
Status check_entry_size(const SafetensorsHeaderTensor& tensor, uint64_t data_size,
                        const std::string& label, uint64_t* numel) {
  const std::string who = "tensor " + quoted(tensor.name);
  const char* dtype = safetensors_name(tensor.dtype);
  if (tensor.begin > tensor.end)
    return rule_error(label, who + " data_offsets begin " + std::to_string(tensor.begin) +
                                 " > end " + std::to_string(tensor.end),
                      "data-offsets");
  uint64_t count = 1;
  for (uint64_t d : tensor.shape)
    if (__builtin_mul_overflow(count, d, &count))
      return rule_error(label, who + " element count of shape " + dims_text(tensor.shape) +
                                   " overflows 64 bits",
                        "size-overflow");
  uint64_t bits = 0;
  if (__builtin_mul_overflow(count, uint64_t{safetensors_bits(tensor.dtype)}, &bits))
    return rule_error(label, who + " size in bits overflows 64 bits", "size-overflow");
  if (bits % 8 != 0)
    return rule_error(label, who + " " + dtype + " shape " + dims_text(tensor.shape) + " holds " +
                                 std::to_string(count) + " elements of " +
                                 std::to_string(safetensors_bits(tensor.dtype)) +
                                 " bits: not a whole number of bytes",
                      "sub-byte");
  const uint64_t bytes = bits / 8;
  if (bytes != tensor.end - tensor.begin)
    return rule_error(label, who + " " + dtype + " shape " + dims_text(tensor.shape) + " needs " +
                                 std::to_string(bytes) + " bytes but data_offsets [" +
                                 std::to_string(tensor.begin) + ", " + std::to_string(tensor.end) +
                                 ") hold " + std::to_string(tensor.end - tensor.begin),
                      "shape-size");
  if (tensor.end > data_size)
    return rule_error(label, who + " data_offsets end " + std::to_string(tensor.end) +
                                 " is past the data section of " + std::to_string(data_size) +
                                 " bytes",
                      "data-bounds");
  *numel = count;
  return Status::ok();
}

// Whether a Shape (int64) holds `dims`: every dimension and each product, multiplied left to
// right as shape_numel does, fit int64. A zero-element tensor may fail this ([2^40, 2^40, 0]
// passes the format's 64-bit unsigned check) and is then no compute tensor.
// Every dim and the product of the nonzero ones fit int64: the row-major strides of the shape
// (products of trailing dims, computed whatever the zeros) then do too.
bool fits_int64_shape(const std::vector<uint64_t>& dims) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  int64_t product = 1;
  for (uint64_t d : dims)
    if (d > kMax || __builtin_mul_overflow(product, static_cast<int64_t>(d == 0 ? 1 : d), &product))
      return false;
  return true;
}

SafetensorsEntry make_entry(SafetensorsHeaderTensor&& tensor, uint64_t numel,
                            const uint8_t* data) {
  SafetensorsEntry entry;
  entry.name = std::move(tensor.name);
  entry.file_dtype = tensor.dtype;
  entry.file_shape = std::move(tensor.shape);
  entry.numel = numel;
  entry.begin = tensor.begin;
  entry.end = tensor.end;
  entry.data = data + tensor.begin;
  if (fits_int64_shape(entry.file_shape) && compute_dtype_of(entry.file_dtype)) {
    entry.dtype = compute_dtype_of(entry.file_dtype);
    entry.shape.assign(entry.file_shape.begin(), entry.file_shape.end());
  }
  return entry;
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
  const uint8_t* header_text = base + 8;
  const size_t bad = first_invalid_utf8(header_text, header_size);
  if (bad != header_size)
    return rule_error(label, "header is not valid UTF-8 at header byte " + std::to_string(bad),
                      "header-utf8");
  auto header = parse_safetensors_header(header_text, header_size, label);
  if (!header) return header.status();

  const uint8_t* data = base + 8 + header_size;
  const uint64_t data_size = size - 8 - header_size;
  std::vector<uint64_t> numels(header->tensors.size());
  for (size_t i = 0; i < header->tensors.size(); ++i)
    DNNB_TRY(check_entry_size(header->tensors[i], data_size, label, &numels[i]));

  // The ranges, in data order, must tile [0, data_size): each starts where the one before
  // ends. Zero-byte ranges sort before a range starting at the same byte.
  std::vector<size_t> order(header->tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& tensors = header->tensors;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(tensors[a].begin, tensors[a].end, tensors[a].name) <
           std::tie(tensors[b].begin, tensors[b].end, tensors[b].name);
  });
  uint64_t covered = 0;  // the ranges so far tile [0, covered)
  for (size_t i : order) {
    const auto& tensor = tensors[i];
    if (tensor.begin > covered)
      return rule_error(label, "bytes [" + std::to_string(covered) + ", " +
                                   std::to_string(tensor.begin) + ") before tensor " +
                                   quoted(tensor.name) + " belong to no tensor",
                        "hole");
    if (tensor.begin < covered)
      return rule_error(label, "tensor " + quoted(tensor.name) + " starts at byte " +
                                   std::to_string(tensor.begin) +
                                   " inside the previous tensor, which ends at " +
                                   std::to_string(covered),
                        "overlap");
    covered = tensor.end;
  }
  if (covered != data_size)
    return rule_error(label, "tensors end at data byte " + std::to_string(covered) + " but the " +
                                 "data section has " + std::to_string(data_size) + " bytes",
                      "trailing-bytes");

  ParsedFile parsed;
  parsed.metadata = std::move(header->metadata);
  parsed.entries.reserve(order.size());
  for (size_t i : order)
    parsed.entries.push_back(make_entry(std::move(header->tensors[i]), numels[i], data));
  return parsed;
}

}  // namespace

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.status();
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->file_ = std::move(*mapped);
  DNNB_TRY(file->parse());
  return file;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::from_bytes(std::vector<uint8_t> bytes,
                                                                     const std::string& label) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->file_ = MappedFile::from_bytes(std::move(bytes), label);
  DNNB_TRY(file->parse());
  return file;
}

Status SafetensorsFile::parse() {
  auto parsed = parse_file(file_.data(), file_.size(), file_.path());
  if (!parsed) return parsed.status();
  entries_ = std::move(parsed->entries);
  metadata_ = std::move(parsed->metadata);
  return Status::ok();
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  for (const auto& entry : entries_)
    if (entry.name == name) return &entry;
  return nullptr;
}

Result<Tensor> SafetensorsFile::load(std::string_view name, DeviceRuntime& host) const {
  const SafetensorsEntry* entry = find(name);
  if (entry == nullptr)
    return Status::bad_input(file_.path() + ": no tensor named " + quoted(std::string(name)));
  if (!entry->dtype) {
    const bool computable = compute_dtype_of(entry->file_dtype).has_value();
    return Status::bad_input(
        file_.path() + ": tensor " + quoted(entry->name) +
        (computable ? " has shape " + dims_text(entry->file_shape) +
                          ", beyond what int64 shapes hold (a dimension or product over 2^63 - 1)"
                    : " has dtype " + std::string(safetensors_name(entry->file_dtype)) +
                          ", which the suite does not compute in") +
        ": it cannot be loaded as a tensor (dnnblocks inspect reads it)");
  }
  auto tensor = empty_tensor(host, *entry->dtype, entry->shape);
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
  if (!safetensors_dtype_of(tensor.dtype))
    return Status::unsupported("safetensors writer: tensor " + quoted(name) + " is " +
                               dtype_name(tensor.dtype) + ", a block format safetensors has no dtype for");
  auto host = to_host(tensor);
  if (!host) return host.status();
  Item item{name, tensor.dtype, tensor.shape, {}};
  item.bytes.resize(storage_bytes(host->dtype, host->numel()));
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
