// Number formats: names, sizes and scalar conversions, bit-exact with torch's
// tensor.to(dtype) on CPU (torch 2.15, the version recorded in the casts fixture).
//
// Every conversion is written as integer bit manipulation so the rules are visible in the
// code: no _Float16 / __bf16 compiler types and no hardware conversion instructions, whose
// behaviour on NaN, subnormals and overflow varies with the ISA and compiler flags.
// docs/numerics.md states each rule and how suites/fixtures/casts proves it against torch.
#include "core/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace dnnb {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;              // our name, as in problem strings ("bf16")
  size_t size;                   // bytes per element
  bool floating;
};

// One row per dtype, in enum order (checked below), so lookups index the table.
constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "f32", 4, true},
    {DType::f16, "f16", 2, true},
    {DType::bf16, "bf16", 2, true},
    {DType::f8_e4m3fn, "f8_e4m3fn", 1, true},
    {DType::f8_e5m2, "f8_e5m2", 1, true},
    {DType::i8, "i8", 1, false},
    {DType::u8, "u8", 1, false},
    {DType::i32, "i32", 4, false},
    {DType::i64, "i64", 8, false},
    {DType::f64, "f64", 8, true},
    {DType::boolean, "bool", 1, false},
};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return std::size(kDTypes) == static_cast<size_t>(DType::boolean) + 1;
}
static_assert(table_in_enum_order(), "kDTypes must list every DType once, in enum order");

const DTypeInfo& info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

uint32_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }
float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }

constexpr uint32_t kF32SignBit = 0x80000000u;
constexpr uint32_t kF32Magnitude = 0x7FFFFFFFu;
constexpr uint32_t kF32Infinity = 0x7F800000u;  // exponent field all ones, mantissa 0
constexpr uint32_t kF32QuietBit = 0x00400000u;  // top mantissa bit: set on a quiet NaN
constexpr int kF32MantissaBits = 23;
constexpr int kF32Bias = 127;

// ---------------------------------------------------------------------------------------
// Decoding: a small float format to f32. Every format decoded here (f16, e4m3fn, e5m2) has
// fewer exponent and mantissa bits than f32, so each value, subnormals included, is an f32
// normal number and the decode is exact. bf16 is different (its subnormals are f32
// subnormals) and is decoded by its own one-liner.
// ---------------------------------------------------------------------------------------
struct SmallFloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  // IEEE-like formats (f16, e5m2) reserve the all-ones exponent for Inf (mantissa 0) and NaN.
  // e4m3fn ("fn" = finite, NaN only) uses that exponent for normal numbers and keeps just
  // S.1111.111 as NaN: no infinity at all.
  bool ieee_specials;
};

constexpr SmallFloatFormat kF16Format{5, 10, 15, true};
constexpr SmallFloatFormat kE4m3fnFormat{4, 3, 7, false};
constexpr SmallFloatFormat kE5m2Format{5, 2, 15, true};

float decode_small_float(uint32_t bits, const SmallFloatFormat& format) {
  const int m = format.mantissa_bits;
  const uint32_t mantissa_mask = (1u << m) - 1;
  const uint32_t exponent_max = (1u << format.exponent_bits) - 1;
  const uint32_t sign = ((bits >> (format.exponent_bits + m)) & 1u) ? kF32SignBit : 0u;
  const uint32_t exponent_field = (bits >> m) & exponent_max;
  uint32_t mantissa = bits & mantissa_mask;
  // Shifts a mantissa field of this format to the top of an f32 mantissa field.
  const int widen = kF32MantissaBits - m;

  if (exponent_field == exponent_max) {
    if (format.ieee_specials) {
      if (mantissa == 0) return float_of(sign | kF32Infinity);
      // A NaN: keep the payload in the top mantissa bits and make it quiet, as the
      // hardware conversions torch uses do. Only NaN-ness is part of the contract.
      return float_of(sign | kF32Infinity | kF32QuietBit | (mantissa << widen));
    }
    if (mantissa == mantissa_mask) return float_of(sign | kF32Infinity | kF32QuietBit);
    // Otherwise an ordinary normal number of e4m3fn (256, 288, ..., 448): fall through.
  }
  if (exponent_field == 0) {
    if (mantissa == 0) return float_of(sign);  // +-0, the sign kept
    // Subnormal: mantissa * 2^(1 - bias - m). Normalise it: shift the mantissa left
    // until its leading 1 reaches the implicit-bit position, lowering the exponent.
    int exponent = 1 - format.bias;
    while ((mantissa & (1u << m)) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= mantissa_mask;  // drop the now-implicit leading 1
    const uint32_t f32_exponent = static_cast<uint32_t>(exponent + kF32Bias);
    return float_of(sign | (f32_exponent << kF32MantissaBits) | (mantissa << widen));
  }
  const int exponent = static_cast<int>(exponent_field) - format.bias;
  const uint32_t f32_exponent = static_cast<uint32_t>(exponent + kF32Bias);
  return float_of(sign | (f32_exponent << kF32MantissaBits) | (mantissa << widen));
}

// ---------------------------------------------------------------------------------------
// Encoding: f32 to a narrower float format, round to nearest, ties to even.
// ---------------------------------------------------------------------------------------
struct NarrowFormat {
  int mantissa_bits;      // M: stored fraction bits
  int bias;               // exponent bias
  int min_exponent;       // exponent of the smallest normal, 1 - bias
  uint32_t max_finite;    // magnitude bits of the largest finite value
  uint32_t on_overflow;   // magnitude bits when a finite value rounds past max_finite
  uint32_t on_infinity;   // magnitude bits for an input of +-Inf
  uint32_t on_nan;        // magnitude bits for a NaN input (a quiet NaN)
  int sign_shift;         // position of the sign bit: exponent bits + M
};

// f16: IEEE binary16. Overflow and Inf give Inf.
constexpr NarrowFormat kToF16{10, 15, -14, 0x7BFF, 0x7C00, 0x7C00, 0x7E00, 15};
// bf16: the top half of an f32, same exponent range, 7 fraction bits. Overflow gives Inf.
constexpr NarrowFormat kToBf16{7, 127, -126, 0x7F7F, 0x7F80, 0x7F80, 0x7FC0, 15};
// e4m3fn: no Inf. torch 2.15 (the fixture's) saturates finite overflow and +-Inf to the
// largest finite +-448 (0x7E); torch 2.11 gave NaN there (changed by pytorch#178817).
// NaN keeps its sign: 0x7F/0xFF.
constexpr NarrowFormat kToE4m3fn{3, 7, -6, 0x7E, 0x7E, 0x7E, 0x7F, 7};
// e5m2: IEEE-like (the top byte of an f16). Overflow and Inf give Inf, NaN is 0x7F/0xFF.
constexpr NarrowFormat kToE5m2{2, 15, -14, 0x7B, 0x7C, 0x7C, 0x7F, 7};

uint32_t encode_narrow_float(float value, const NarrowFormat& format) {
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 31) << format.sign_shift;
  const uint32_t magnitude = bits & kF32Magnitude;
  if (magnitude > kF32Infinity) return sign | format.on_nan;
  if (magnitude == kF32Infinity) return sign | format.on_infinity;

  // Write |value| = significand * 2^(exponent - 23) with an integer significand.
  const uint32_t exponent_field = magnitude >> kF32MantissaBits;
  const uint32_t fraction = magnitude & ((1u << kF32MantissaBits) - 1);
  int exponent;
  uint64_t significand;
  if (exponent_field == 0) {  // f32 subnormal (or zero): no implicit leading 1
    exponent = 1 - kF32Bias;
    significand = fraction;
  } else {
    exponent = static_cast<int>(exponent_field) - kF32Bias;
    significand = fraction | (1u << kF32MantissaBits);
  }

  // In the target, numbers of exponent e are multiples of the quantum 2^(e - M); below the
  // smallest normal the quantum stays 2^(min_exponent - M): those are the subnormals.
  // Count quanta: significand * 2^(exponent - 23) / 2^(target_exponent - M), i.e. a right
  // shift, which is always >= 23 - M > 0 because target_exponent >= exponent.
  const int target_exponent = std::max(exponent, format.min_exponent);
  const int shift = (target_exponent - format.mantissa_bits) - (exponent - kF32MantissaBits);
  uint64_t quanta = 0;
  if (shift <= 24) {
    // Round to nearest; on an exact tie round to the even count. The count's lowest bit is
    // the encoding's lowest bit, so "even" here is the IEEE ties-to-even rule.
    quanta = significand >> shift;
    const uint64_t remainder = significand & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (remainder > half || (remainder == half && (quanta & 1) != 0)) ++quanta;
  }
  // else: significand < 2^24 <= half a quantum, so the value rounds to zero.

  // A normal result has quanta in [2^M, 2^(M+1)]: its leading 1 sits exactly on the lowest
  // exponent bit, so adding (target_exponent + bias - 1) << M gives the encoding, and a
  // round-up to 2^(M+1) carries into the next exponent as it must. A subnormal result has
  // target_exponent = min_exponent, so the added term is 0 and quanta < 2^M is the mantissa
  // (quanta == 2^M is the smallest normal, correctly encoded the same way).
  const int64_t encoded =
      (static_cast<int64_t>(target_exponent + format.bias - 1) << format.mantissa_bits) +
      static_cast<int64_t>(quanta);
  if (encoded > static_cast<int64_t>(format.max_finite)) return sign | format.on_overflow;
  return sign | static_cast<uint32_t>(encoded);
}

// ---------------------------------------------------------------------------------------
// Integers. Truncation toward zero; C++ leaves out-of-range and NaN undefined, so we define
// them the way torch behaves on x86 (cvttsd2si returns the "integer indefinite" minimum):
// int8 and int32 go through int32, uint8 and int64 through int64, and narrower results keep
// the low bits. References must not rely on these cases; they are pinned so that nothing
// here is undefined behaviour.
// ---------------------------------------------------------------------------------------
int32_t truncate_to_i32(double value) {
  if (!(value > -2147483649.0 && value < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(value);
}

int64_t truncate_to_i64(double value) {
  if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0))
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

template <typename T>
T load_as(const void* base, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t*>(base) + index * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return value;
}

template <typename T>
void store_as(void* base, int64_t index, T value) {
  std::memcpy(static_cast<uint8_t*>(base) + index * static_cast<int64_t>(sizeof(T)), &value,
              sizeof(T));
}

}  // namespace

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> dtypes = [] {
    std::vector<DType> list;
    for (const auto& row : kDTypes) list.push_back(row.dtype);
    return list;
  }();
  return dtypes;
}

size_t dtype_size(DType dtype) { return info(dtype).size; }
const char* dtype_name(DType dtype) { return info(dtype).name; }
bool is_floating(DType dtype) { return info(dtype).floating; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& row : kDTypes) {
    if (name == row.name) return row.dtype;
  }
  return std::nullopt;
}

float f16_to_f32(uint16_t bits) { return decode_small_float(bits, kF16Format); }
uint16_t f32_to_f16(float value) { return static_cast<uint16_t>(encode_narrow_float(value, kToF16)); }

// bf16 is the upper half of an f32: decoding appends 16 zero bits (NaN payloads included).
float bf16_to_f32(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }
uint16_t f32_to_bf16(float value) { return static_cast<uint16_t>(encode_narrow_float(value, kToBf16)); }

float f8_e4m3fn_to_f32(uint8_t bits) { return decode_small_float(bits, kE4m3fnFormat); }
uint8_t f32_to_f8_e4m3fn(float value) {
  return static_cast<uint8_t>(encode_narrow_float(value, kToE4m3fn));
}

float f8_e5m2_to_f32(uint8_t bits) { return decode_small_float(bits, kE5m2Format); }
uint8_t f32_to_f8_e5m2(float value) { return static_cast<uint8_t>(encode_narrow_float(value, kToE5m2)); }

double load_element(const void* base, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::f32: return load_as<float>(base, index);
    case DType::f16: return f16_to_f32(load_as<uint16_t>(base, index));
    case DType::bf16: return bf16_to_f32(load_as<uint16_t>(base, index));
    case DType::f8_e4m3fn: return f8_e4m3fn_to_f32(load_as<uint8_t>(base, index));
    case DType::f8_e5m2: return f8_e5m2_to_f32(load_as<uint8_t>(base, index));
    case DType::i8: return load_as<int8_t>(base, index);
    case DType::u8: return load_as<uint8_t>(base, index);
    case DType::i32: return load_as<int32_t>(base, index);
    case DType::i64: return static_cast<double>(load_as<int64_t>(base, index));  // exact to 2^53
    case DType::f64: return load_as<double>(base, index);
    case DType::boolean: return load_as<uint8_t>(base, index) != 0 ? 1.0 : 0.0;
  }
  return 0.0;  // unreachable: every enumerator is handled above
}

void store_element(void* base, DType dtype, int64_t index, double value) {
  // Narrow floats round twice on purpose, double -> f32 -> format: a reference computes in
  // double where torch computes in float32 and then casts, so this matches torch's result.
  // IEEE 754 conversion (checked below): nearest even, and +-Inf beyond the f32 range.
  static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559);
  const auto as_f32 = [value] { return static_cast<float>(value); };
  switch (dtype) {
    case DType::f32: store_as<float>(base, index, as_f32()); return;
    case DType::f16: store_as<uint16_t>(base, index, f32_to_f16(as_f32())); return;
    case DType::bf16: store_as<uint16_t>(base, index, f32_to_bf16(as_f32())); return;
    case DType::f8_e4m3fn: store_as<uint8_t>(base, index, f32_to_f8_e4m3fn(as_f32())); return;
    case DType::f8_e5m2: store_as<uint8_t>(base, index, f32_to_f8_e5m2(as_f32())); return;
    case DType::i8: store_as<int8_t>(base, index, static_cast<int8_t>(truncate_to_i32(value))); return;
    case DType::u8: store_as<uint8_t>(base, index, static_cast<uint8_t>(truncate_to_i64(value))); return;
    case DType::i32: store_as<int32_t>(base, index, truncate_to_i32(value)); return;
    case DType::i64: store_as<int64_t>(base, index, truncate_to_i64(value)); return;
    case DType::f64: store_as<double>(base, index, value); return;
    // torch: bool(x) is x != 0, so NaN is true. Stored as the byte 0 or 1.
    case DType::boolean: store_as<uint8_t>(base, index, value != 0.0 ? 1 : 0); return;
  }
}

}  // namespace dnnb
