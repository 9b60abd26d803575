// The safetensors file dtypes: names, bit widths, the compute dtype of each, and decoding to
// double for inspect's statistics. Encodings: OCP Microscaling Formats (MX) v1.0 for F4
// (E2M1), F6 and F8_E8M0; torch's float8_e4m3fnuz / float8_e5m2fnuz for the FNUZ formats
// (one NaN, 0x80, no negative zero, no infinity); docs/safetensors.md lists them.
#include "core/safetensors_dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace dnnb {
namespace {

struct FileDTypeInfo {
  SafetensorsDType dtype;
  const char* name;
  unsigned bits;
  std::optional<DType> compute;
  bool floating;
};

// One row per dtype, in enum order (checked below).
const FileDTypeInfo kFileDTypes[] = {
    {SafetensorsDType::boolean, "BOOL", 8, DType::boolean, false},
    {SafetensorsDType::u8, "U8", 8, DType::u8, false},
    {SafetensorsDType::i8, "I8", 8, DType::i8, false},
    {SafetensorsDType::u16, "U16", 16, std::nullopt, false},
    {SafetensorsDType::i16, "I16", 16, std::nullopt, false},
    {SafetensorsDType::u32, "U32", 32, std::nullopt, false},
    {SafetensorsDType::i32, "I32", 32, DType::i32, false},
    {SafetensorsDType::u64, "U64", 64, std::nullopt, false},
    {SafetensorsDType::i64, "I64", 64, DType::i64, false},
    {SafetensorsDType::f4, "F4", 4, DType::f4_e2m1, true},
    {SafetensorsDType::f6_e2m3, "F6_E2M3", 6, std::nullopt, true},
    {SafetensorsDType::f6_e3m2, "F6_E3M2", 6, std::nullopt, true},
    {SafetensorsDType::f8_e4m3, "F8_E4M3", 8, DType::f8_e4m3fn, true},
    {SafetensorsDType::f8_e5m2, "F8_E5M2", 8, DType::f8_e5m2, true},
    {SafetensorsDType::f8_e8m0, "F8_E8M0", 8, DType::f8_e8m0, true},
    {SafetensorsDType::f8_e4m3fnuz, "F8_E4M3FNUZ", 8, std::nullopt, true},
    {SafetensorsDType::f8_e5m2fnuz, "F8_E5M2FNUZ", 8, std::nullopt, true},
    {SafetensorsDType::f16, "F16", 16, DType::f16, true},
    {SafetensorsDType::bf16, "BF16", 16, DType::bf16, true},
    {SafetensorsDType::f32, "F32", 32, DType::f32, true},
    {SafetensorsDType::f64, "F64", 64, DType::f64, true},
    {SafetensorsDType::c64, "C64", 64, std::nullopt, true},
};

constexpr size_t kFileDTypeCount = static_cast<size_t>(SafetensorsDType::c64) + 1;
static_assert(std::size(kFileDTypes) == kFileDTypeCount, "one row per SafetensorsDType");

const FileDTypeInfo& info(SafetensorsDType dtype) {
  return kFileDTypes[static_cast<size_t>(dtype)];
}

template <typename T>
T load_at(const uint8_t* data, uint64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

// A sign / exponent / mantissa code with no special values: exponent 0 is subnormal.
double minifloat(unsigned code, int exponent_bits, int mantissa_bits, int bias) {
  const unsigned mantissa = code & ((1u << mantissa_bits) - 1);
  const unsigned exponent = (code >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const bool negative = (code >> (mantissa_bits + exponent_bits)) & 1u;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, 1 - bias - mantissa_bits)
                    : std::ldexp((1u << mantissa_bits) + mantissa,
                                 static_cast<int>(exponent) - bias - mantissa_bits);
  return negative ? -magnitude : magnitude;
}

// FNUZ: 0x80 (negative zero's code) is the only NaN; all other codes are finite.
double fnuz(uint8_t code, int exponent_bits, int mantissa_bits, int bias) {
  if (code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  return minifloat(code, exponent_bits, mantissa_bits, bias);
}

}  // namespace

const std::vector<SafetensorsDType>& all_safetensors_dtypes() {
  static const std::vector<SafetensorsDType> all = [] {
    std::vector<SafetensorsDType> out;
    for (const auto& row : kFileDTypes) out.push_back(row.dtype);
    return out;
  }();
  return all;
}

const char* safetensors_name(SafetensorsDType dtype) { return info(dtype).name; }

std::optional<SafetensorsDType> parse_safetensors_name(std::string_view name) {
  for (const auto& row : kFileDTypes)
    if (name == row.name) return row.dtype;
  return std::nullopt;
}

std::string safetensors_name_list() {
  std::string out;
  for (const auto& row : kFileDTypes) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

unsigned safetensors_bits(SafetensorsDType dtype) { return info(dtype).bits; }

std::optional<DType> compute_dtype_of(SafetensorsDType dtype) { return info(dtype).compute; }

std::optional<SafetensorsDType> safetensors_dtype_of(DType dtype) {
  for (const auto& row : kFileDTypes)
    if (row.compute == dtype) return row.dtype;
  return std::nullopt;  // a block format: every scalar DType has a row above
}

const char* safetensors_dtype_name(DType dtype) {
  const auto file_dtype = safetensors_dtype_of(dtype);
  return file_dtype ? safetensors_name(*file_dtype) : nullptr;
}

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  const auto file_dtype = parse_safetensors_name(name);
  return file_dtype ? compute_dtype_of(*file_dtype) : std::nullopt;
}

unsigned safetensors_values_per_element(SafetensorsDType dtype) {
  return dtype == SafetensorsDType::c64 ? 2 : 1;
}

bool safetensors_decodable(SafetensorsDType dtype) {
  return dtype != SafetensorsDType::f6_e2m3 && dtype != SafetensorsDType::f6_e3m2;
}

bool safetensors_floating(SafetensorsDType dtype) { return info(dtype).floating; }

double decode_safetensors_value(const uint8_t* data, SafetensorsDType dtype, uint64_t index) {
  switch (dtype) {
    case SafetensorsDType::boolean: return load_at<uint8_t>(data, index) != 0 ? 1.0 : 0.0;
    case SafetensorsDType::u8: return load_at<uint8_t>(data, index);
    case SafetensorsDType::i8: return load_at<int8_t>(data, index);
    case SafetensorsDType::u16: return load_at<uint16_t>(data, index);
    case SafetensorsDType::i16: return load_at<int16_t>(data, index);
    case SafetensorsDType::u32: return load_at<uint32_t>(data, index);
    case SafetensorsDType::i32: return load_at<int32_t>(data, index);
    case SafetensorsDType::u64: return static_cast<double>(load_at<uint64_t>(data, index));
    case SafetensorsDType::i64: return static_cast<double>(load_at<int64_t>(data, index));
    case SafetensorsDType::f4: {
      const uint8_t pair = data[index / 2];
      return minifloat(index % 2 == 0 ? pair & 0x0F : pair >> 4, 2, 1, 1);
    }
    case SafetensorsDType::f6_e2m3:
    case SafetensorsDType::f6_e3m2:
      return std::numeric_limits<double>::quiet_NaN();  // not decodable: callers check first
    case SafetensorsDType::f8_e4m3: return f8_e4m3fn_to_f32(data[index]);
    case SafetensorsDType::f8_e5m2: return f8_e5m2_to_f32(data[index]);
    case SafetensorsDType::f8_e8m0: {
      const uint8_t code = data[index];
      if (code == 0xFF) return std::numeric_limits<double>::quiet_NaN();
      return std::ldexp(1.0, static_cast<int>(code) - 127);
    }
    case SafetensorsDType::f8_e4m3fnuz: return fnuz(data[index], 4, 3, 8);
    case SafetensorsDType::f8_e5m2fnuz: return fnuz(data[index], 5, 2, 16);
    case SafetensorsDType::f16: return f16_to_f32(load_at<uint16_t>(data, index));
    case SafetensorsDType::bf16: return bf16_to_f32(load_at<uint16_t>(data, index));
    case SafetensorsDType::f32:
    case SafetensorsDType::c64: return load_at<float>(data, index);
    case SafetensorsDType::f64: return load_at<double>(data, index);
  }
  return std::numeric_limits<double>::quiet_NaN();  // unreachable: every dtype is handled
}

}  // namespace dnnb
