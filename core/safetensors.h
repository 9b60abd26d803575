// safetensors reader (mmap) and writer. Every file is untrusted input: the reader
// validates the header length, the JSON, dtype names, shape x dtype size against each byte
// range, offsets inside the data, contiguous non-overlapping ranges that tile the data,
// unique names and integer overflow. Each violation is bad_input naming the file and rule.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets inside the data section
  uint64_t end = 0;
  const uint8_t* data = nullptr;  // points into the mapped file
};

class SafetensorsFile {
 public:
  // Maps and validates `path`.
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);
  // Validates bytes already in memory (tests, fuzzing); `label` names it in errors.
  static Result<std::shared_ptr<SafetensorsFile>> from_bytes(std::vector<uint8_t> bytes,
                                                             const std::string& label);
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // file order
  const SafetensorsEntry* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // A contiguous host tensor holding a copy of the named entry (bad_input if missing).
  Result<Tensor> load(std::string_view name, DeviceRuntime& host) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;            // mmap'd region, or nullptr when owned_ holds the bytes
  std::vector<uint8_t> owned_;
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
