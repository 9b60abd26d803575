// safetensors reader (core/mapped_file.h) and writer. Every file is untrusted input: the reader accepts
// exactly the files the format's reference reader (the Rust `safetensors` crate) accepts,
// except that duplicate names are refused (docs/safetensors.md). It checks the header length,
// the JSON (core/safetensors_header.h), dtype names, shape x dtype bits against each byte
// range, offsets inside the data, contiguous ranges that tile the data, and integer
// overflow. Each violation is bad_input naming the file and rule.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/mapped_file.h"
#include "core/safetensors_dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

struct SafetensorsEntry {
  std::string name;
  SafetensorsDType file_dtype = SafetensorsDType::f32;  // as the header names it
  std::vector<uint64_t> file_shape;                     // as the header writes it
  uint64_t numel = 0;   // product of file_shape (the reader checks it fits in 64 bits)
  uint64_t begin = 0;   // byte offsets inside the data section
  uint64_t end = 0;
  const uint8_t* data = nullptr;  // points into the mapped file
  // The entry as a compute tensor, set only when load() can make one: the suite computes in
  // file_dtype, and every dimension and product of dimensions (left to right) fits int64,
  // which only a zero-element tensor can miss. Otherwise dtype and shape are empty.
  std::optional<DType> dtype;
  Shape shape;
};

class SafetensorsFile {
 public:
  // Maps and validates `path`.
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Validates bytes already in memory (tests, fuzzing); `label` names it in errors.
  static Result<std::shared_ptr<SafetensorsFile>> from_bytes(std::vector<uint8_t> bytes,
                                                             const std::string& label);
  const std::string& path() const { return file_.path(); }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // file order
  const SafetensorsEntry* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // A contiguous host tensor holding a copy of the named entry; bad_input if it is missing or
  // has no compute dtype (F4, U16, C64, ...: entry.dtype is empty).
  Result<Tensor> load(std::string_view name, DeviceRuntime& host) const;

 private:
  SafetensorsFile() = default;
  Status parse();
  MappedFile file_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

class SafetensorsWriter {
 public:
  // Copies the tensor's data (any layout, any device) in row-major order.
  Status add(const std::string& name, const Tensor& tensor);
  void set_metadata(const std::string& key, const std::string& value);
  // Deterministic bytes: tensors in insertion order, keys of the header sorted.
  Status write(const std::string& path) const;
  Result<std::vector<uint8_t>> to_bytes() const;

 private:
  struct Item {
    std::string name;
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Item> items_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace dnnb
