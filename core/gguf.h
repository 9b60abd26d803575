// GGUF reader (llama.cpp's model format) over a core/mapped_file.h file. Every file is untrusted input: the reader
// accepts what ggml's own reader (ggml/src/gguf.cpp, gguf_init_from_file, as llama.cpp loads a
// model) accepts and refuses what it refuses, and checks what that reader leaves to its caller
// (each tensor's data inside the file, keys and names valid UTF-8); docs/gguf.md lists every
// rule. Each violation is bad_input "FILE: at byte N, FIELD: what (rule: RULE)".
//
// Layout (little-endian): magic "GGUF", u32 version (2 or 3), u64 tensor count, u64 metadata
// count, the metadata (key string, u32 value type, value), the tensor infos (name string, u32
// n_dims, n_dims u64 dims, u32 ggml type, u64 offset), padding to the alignment, the data.
// GGUF dims run fastest-varying first (ggml's ne[0] is the row length): a tensor written with
// dims [4096, 11008] is a row-major [11008, 4096] matrix; load() reverses them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/gguf_types.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

// GGUF metadata value types (gguf_type); the numbers are the file's.
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
constexpr uint32_t kGgufTypeCount = 13;
const char* gguf_type_name(GgufType type);  // "u8", ..., "bool", "str", "arr", "f64" (ggml's)

// ggml's limits: longer strings and longer arrays are refused.
constexpr uint64_t kGgufMaxStringLength = uint64_t{1} << 30;
constexpr uint64_t kGgufMaxArrayElements = uint64_t{1} << 30;
constexpr uint64_t kGgufMaxNameLength = 63;  // ggml's GGML_MAX_NAME (64) less the NUL
constexpr uint32_t kGgufMaxDims = 4;
constexpr uint32_t kGgufDefaultAlignment = 32;

struct GgufKeyValue {
  std::string key;
  bool is_array = false;
  GgufType type = GgufType::u8;  // the scalar's type, or the array's element type
  uint64_t count = 1;            // elements: 1 for a scalar
  uint64_t entry_offset = 0;     // file offset where the key's entry starts
  uint64_t value_offset = 0;     // file offset of the first element
  // For strings: file offset of each string's u64 length (one for a scalar string).
  std::vector<uint64_t> string_offsets;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;            // ggml type id (core/gguf_types.h)
  std::vector<uint64_t> dims;   // as written: dims[0] is the row length (ggml's ne[0])
  uint64_t numel = 0;
  uint64_t bytes = 0;           // numel / block values x block bytes
  uint64_t offset = 0;          // as written: from the start of the data section
  uint64_t info_offset = 0;     // file offset where this tensor's info starts
  const uint8_t* data = nullptr;  // points into the file's bytes
};

class GgufFile {
 public:
  // True when `bytes` start with the GGUF magic (for dispatch on content, not extension).
  static bool has_magic(const uint8_t* bytes, size_t size);
  // Maps and validates `path`.
  static Result<std::shared_ptr<GgufFile>> open(const std::string& path);
  // Validates bytes already in memory (tests, fuzzing); `label` names it in errors.
  static Result<std::shared_ptr<GgufFile>> from_bytes(std::vector<uint8_t> bytes,
                                                      const std::string& label);
  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  uint64_t file_size() const { return file_.size(); }
  const std::vector<GgufKeyValue>& metadata() const { return kvs_; }      // file order
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }  // file order
  const GgufKeyValue* find_key(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Element `i` of a numeric or bool value as a double (bool: 0 or 1; 64-bit integers beyond
  // 2^53 round) and the exact integer forms (an integer of the other signedness converts as
  // C++ does; 0 for a float type); the string `i` of a string value. Preconditions:
  // i < kv.count and the value is not a string (strings: not a number), which the reader's
  // bounds make safe to read.
  double number(const GgufKeyValue& kv, uint64_t i) const;
  int64_t as_int64(const GgufKeyValue& kv, uint64_t i) const;    // signed types and bool
  uint64_t as_uint64(const GgufKeyValue& kv, uint64_t i) const;  // unsigned types
  std::string string(const GgufKeyValue& kv, uint64_t i) const;

  // The named tensor as a contiguous host tensor: its shape is the dims reversed (row-major,
  // last dim the row), its dtype ggml_compute_dtype(type): f32, f16, bf16, f64, i8, i32, i64
  // as they are, q8_0 and q4_0 as the suite's block dtypes (the same block bytes). bad_input
  // when there is no such tensor or its type has no compute dtype (q4_K, ...) or its dims do
  // not fit int64 products.
  Result<Tensor> load(std::string_view name, DeviceRuntime& host) const;

 private:
  GgufFile() = default;
  Status parse();
  const uint8_t* base() const { return file_.data(); }
  size_t size() const { return file_.size(); }
  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> kvs_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace dnnb
