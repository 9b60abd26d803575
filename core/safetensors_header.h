// The JSON header of a safetensors file, parsed with the rules of the format's reference
// reader (Hugging Face's Rust `safetensors` crate, which reads through serde_json): what it
// accepts, this accepts, and what it refuses, this refuses (docs/safetensors.md lists the
// rules and the one deliberate difference: duplicate names are refused). Header bytes are
// untrusted: every read is bounds-checked and nesting is limited as serde_json limits it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/safetensors_dtype.h"
#include "core/status.h"

namespace dnnb {

struct SafetensorsHeaderTensor {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::f32;
  std::vector<uint64_t> shape;  // as written: any unsigned 64-bit dimension
  uint64_t begin = 0;           // data_offsets, relative to the data section
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<SafetensorsHeaderTensor> tensors;  // in header order
  std::map<std::string, std::string> metadata;
};

// Parses the `size` header bytes that follow the 8-byte length. Checks the JSON and each
// entry's form; the data layout (sizes, offsets tiling the data) is the caller's. Errors are
// bad_input "LABEL: what is wrong (rule: RULE)".
Result<SafetensorsHeader> parse_safetensors_header(const uint8_t* text, size_t size,
                                                   const std::string& label);

// "LABEL: what (rule: RULE)" as bad_input: the form of every reader error.
Status safetensors_rule_error(const std::string& label, const std::string& what,
                              const char* rule);
// Strict UTF-8 (RFC 3629, as Rust's str::from_utf8): no overlong forms, no surrogates,
// nothing above U+10FFFF. Returns the offset of the first bad byte, or `size` when all is well.
size_t first_invalid_utf8(const uint8_t* p, size_t size);
// A name or key from a file, JSON-quoted (no control byte reaches a terminal) and cut after
// 80 bytes.
std::string quoted_for_message(const std::string& text);

}  // namespace dnnb
