// Number formats: names, storage traits and scalar conversions, bit-exact with torch's
// tensor.to(dtype) on CPU (torch 2.15, the version recorded in the casts fixture), and the
// block formats' decode and quantise rules (ggml's q8_0 / q4_0, OCP MX v1.0's MXFP8 / MXFP4).
//
// Every conversion is written as integer bit manipulation so the rules are visible in the
// code: no _Float16 / __bf16 compiler types and no hardware conversion instructions, whose
// behaviour on NaN, subnormals and overflow varies with the ISA and compiler flags.
// docs/numerics.md states each rule and how suites/fixtures/casts proves it against torch.
#include "core/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace dnnb {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;              // our name, as in problem strings ("bf16")
  int64_t block_values;          // values per block: 1 for scalar formats
  int64_t block_bits;            // bits per block
  bool floating;
};

constexpr int64_t kBlock = 32;   // values per block of every block format here

// One row per dtype, in enum order (checked below), so lookups index the table.
constexpr DTypeInfo kDTypes[] = {
    {DType::f32, "f32", 1, 32, true},
    {DType::f16, "f16", 1, 16, true},
    {DType::bf16, "bf16", 1, 16, true},
    {DType::f8_e4m3fn, "f8_e4m3fn", 1, 8, true},
    {DType::f8_e5m2, "f8_e5m2", 1, 8, true},
    {DType::i8, "i8", 1, 8, false},
    {DType::u8, "u8", 1, 8, false},
    {DType::i32, "i32", 1, 32, false},
    {DType::i64, "i64", 1, 64, false},
    {DType::f64, "f64", 1, 64, true},
    {DType::boolean, "bool", 1, 8, false},
    {DType::f8_e8m0, "f8_e8m0", 1, 8, true},
    {DType::f4_e2m1, "f4_e2m1", 1, 4, true},
    {DType::q8_0, "q8_0", kBlock, 8 * (2 + 32), true},    // f16 d, 32 x int8
    {DType::q4_0, "q4_0", kBlock, 8 * (2 + 16), true},    // f16 d, 16 bytes of nibble pairs
    {DType::mxfp8, "mxfp8", kBlock, 8 * (1 + 32), true},  // E8M0 scale, 32 x E4M3
    {DType::mxfp4, "mxfp4", kBlock, 8 * (1 + 16), true},  // E8M0 scale, 16 bytes of E2M1 pairs
    {DType::mxfp8_e5m2, "mxfp8_e5m2", kBlock, 8 * (1 + 32), true},  // E8M0 scale, 32 x E5M2
};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<size_t>(kDTypes[i].dtype) != i) return false;
  }
  return std::size(kDTypes) == static_cast<size_t>(DType::mxfp8_e5m2) + 1;
}
static_assert(table_in_enum_order(), "kDTypes must list every DType once, in enum order");

const DTypeInfo& info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

// A broken precondition (a caller's bug, not bad input): say which and stop, in every build
// type, rather than return a byte count or a value that is silently wrong.
[[noreturn]] void contract_violation(const std::string& what) {
  std::fprintf(stderr, "dnnblocks: %s\n", what.c_str());
  std::abort();
}

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
// e2m1 (OCP MX FP4): no Inf, no NaN. Overflow (past 6 after rounding), +-Inf and NaN
// saturate to +-6 (0x7), the OCP MX element conversion's clamping; torch has no cast to it.
constexpr NarrowFormat kToE2m1{1, 1, 0, 0x7, 0x7, 0x7, 0x7, 3};

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

const char* dtype_name(DType dtype) { return info(dtype).name; }
bool is_floating(DType dtype) { return info(dtype).floating; }

bool is_block_format(DType dtype) { return info(dtype).block_values > 1; }
int64_t block_values(DType dtype) { return info(dtype).block_values; }
int64_t block_bits(DType dtype) { return info(dtype).block_bits; }
int64_t block_bytes(DType dtype) { return (info(dtype).block_bits + 7) / 8; }

size_t storage_bytes(DType dtype, int64_t numel) {
  const DTypeInfo& row = info(dtype);
  if (numel < 0 || numel % row.block_values != 0)
    contract_violation("storage_bytes: " + std::to_string(numel) + " values of " + row.name +
                       " are not a whole number of its " + std::to_string(row.block_values) +
                       "-value blocks");
  const int64_t bits = numel / row.block_values * row.block_bits;
  return static_cast<size_t>((bits + 7) / 8);
}

bool starts_storage_unit(DType dtype, int64_t index) {
  const DTypeInfo& row = info(dtype);
  return index % row.block_values == 0 && (index / row.block_values * row.block_bits) % 8 == 0;
}

size_t dtype_size(DType dtype) {
  const DTypeInfo& row = info(dtype);
  if (row.block_values != 1 || row.block_bits % 8 != 0)
    contract_violation(std::string("dtype_size: ") + row.name +
                       " has no whole bytes per value; count bytes with storage_bytes");
  return static_cast<size_t>(row.block_bits / 8);
}

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

float f8_e8m0_to_f32(uint8_t bits) {
  if (bits == 0xFF) return float_of(kF32Infinity | kF32QuietBit);
  // 2^(bits - 127): an f32 with that biased exponent, except 0x00, whose 2^-127 is the f32
  // subnormal with only the top mantissa bit set.
  return bits == 0 ? float_of(kF32QuietBit) : float_of(static_cast<uint32_t>(bits) << kF32MantissaBits);
}

uint8_t f32_to_f8_e8m0(float value) {
  // torch's float8_e8m0fnu cast (c10 fp8e8m0fnu_from_fp32_value): keep the f32 exponent field
  // (so the sign is dropped and 0 or any subnormal starts at 0x00) and round it up by one when
  // the mantissa's top bit (guard) is set and either a lower bit is set or the implicit bit
  // is 1 (a normal f32): at exactly half a normal rounds up, a subnormal down.
  const uint32_t bits = bits_of(value);
  uint32_t exponent = (bits >> kF32MantissaBits) & 0xFF;
  if (exponent == 0xFF) return 0xFF;  // NaN and +-Inf
  const bool guard = (bits & 0x400000u) != 0;
  const bool below_guard = (bits & 0x3FFFFFu) != 0;
  if (guard && (below_guard || exponent > 0)) ++exponent;  // 254 + 1 is 0xFF, NaN
  return static_cast<uint8_t>(exponent);
}

float f4_e2m1_to_f32(uint8_t bits) {
  // Exponent 0 is subnormal (0 or 0.5); the rest are 2^(e - 1) x 1.m.
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = kMagnitude[bits & 0x7];
  return (bits & 0x8) ? -magnitude : magnitude;
}
uint8_t f32_to_f4_e2m1(float value) { return static_cast<uint8_t>(encode_narrow_float(value, kToE2m1)); }

// ---------------------------------------------------------------------------------------
// Block formats: 32 values share one scale. A block is its scale, then its elements, as in
// ggml's block_q8_0, block_q4_0 and block_mxfp4 (the OCP MX spec fixes the encodings, not
// where a scale is stored; keeping it in the block makes every format self-contained).
// ---------------------------------------------------------------------------------------
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

const uint8_t* block_of(const void* base, DType dtype, int64_t index) {
  return static_cast<const uint8_t*>(base) + index / kBlock * (info(dtype).block_bits / 8);
}

// q4_0 (ggml): byte j % 16 holds element j (j < 16) in its low nibble and element j + 16 in
// its high nibble.
uint8_t q4_0_code(const uint8_t* qs, int64_t j) {
  const uint8_t byte = qs[j % 16];
  return j < 16 ? byte & 0x0F : byte >> 4;
}

// E2M1 pairs (OCP MX, torch's float4_e2m1fn_x2, safetensors F4): byte k holds element 2k in
// its low nibble and element 2k + 1 in its high nibble.
uint8_t pair_code(const uint8_t* packed, int64_t j) {
  const uint8_t byte = packed[j / 2];
  return j % 2 == 0 ? byte & 0x0F : byte >> 4;
}
void set_pair_code(uint8_t* packed, int64_t j, uint8_t code) {
  uint8_t& byte = packed[j / 2];
  byte = j % 2 == 0 ? static_cast<uint8_t>((byte & 0xF0) | code)
                    : static_cast<uint8_t>((byte & 0x0F) | (code << 4));
}

// OCP MX: value = 2^(scale - 127) x element, and a NaN scale (0xFF) makes every value of the
// block NaN. Exact in double (in f32, 2^127 x 448 would overflow).
double mx_value(uint8_t scale, float element) {
  if (scale == 0xFF) return kNaN;
  return std::ldexp(static_cast<double>(element), static_cast<int>(scale) - 127);
}

double load_block_element(const void* base, DType dtype, int64_t index) {
  const uint8_t* block = block_of(base, dtype, index);
  const int64_t j = index % kBlock;
  // q8_0 and q4_0: d x q with d an f16 (11 significant bits) and q at most 8 bits, so the
  // product is exact, in double as in ggml's f32 dequantize_row_*.
  const auto d = [block] { return static_cast<double>(f16_to_f32(load_as<uint16_t>(block, 0))); };
  switch (dtype) {
    case DType::q8_0: return d() * static_cast<int8_t>(block[2 + j]);
    case DType::q4_0: return d() * (q4_0_code(block + 2, j) - 8);
    case DType::mxfp8: return mx_value(block[0], f8_e4m3fn_to_f32(block[1 + j]));
    case DType::mxfp8_e5m2: return mx_value(block[0], f8_e5m2_to_f32(block[1 + j]));
    case DType::mxfp4: return mx_value(block[0], f4_e2m1_to_f32(pair_code(block + 1, j)));
    default: return kNaN;  // unreachable: called for the block formats only
  }
}

// q8_0, after ggml's quantize_row_q8_0_ref (ggml/src/ggml-quants.c): d = amax / 127 in f32,
// q = roundf(x * (1 / d)) (nearest, ties away from zero), d stored as f16 (nearest even).
// Where ggml converts an out-of-range float to int8 (undefined behaviour, reached only when
// d is an f32 subnormal, so that 1 / d is Inf and d's f16 is 0), q is clamped to +-127 and
// NaN gives 0: the block decodes to zeros either way.
void quantize_q8_0(const float* x, uint8_t* block) {
  float amax = 0.0f;
  for (int64_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_as<uint16_t>(block, 0, f32_to_f16(d));
  for (int64_t j = 0; j < kBlock; ++j) {
    const float q = std::round(x[j] * id);
    block[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::isnan(q) ? 0.0f : std::clamp(q, -127.0f, 127.0f)));
  }
}

// q4_0, after ggml's quantize_row_q4_0_ref: the value of largest magnitude (the first one on
// a tie), with its sign, sets d = max / -8, so that it gets q = 0 (-8 d) and the other end
// reaches q = 16, clamped to 15; q = min(15, trunc(x * (1 / d) + 8.5)). The product and the
// sum round to f32 separately, as ggml's C compiled without FMA does (gguf-py notes that an
// FMA build rounds differently); `volatile` keeps a compiler that targets FMA from fusing
// them. ggml's undefined float-to-int8 cases (1 / d is Inf; d's f16 is 0) give 0 or 15 here.
uint8_t q4_0_quantize_one(float x, float id) {
  volatile float scaled = x * id;
  const float shifted = scaled + 8.5f;
  if (!(shifted > 0.0f)) return 0;
  return shifted >= 15.0f ? 15 : static_cast<uint8_t>(shifted);  // truncation toward zero
}
void quantize_q4_0(const float* x, uint8_t* block) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int64_t j = 0; j < kBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;  // an all-zero block gets -0 (0x8000), as in ggml
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_as<uint16_t>(block, 0, f32_to_f16(d));
  for (int64_t j = 0; j < 16; ++j)
    block[2 + j] = static_cast<uint8_t>(q4_0_quantize_one(x[j], id) | (q4_0_quantize_one(x[j + 16], id) << 4));
}

// mxfp8, mxfp8_e5m2 and mxfp4, by the OCP MX v1.0 spec's conversion (section 6.3): the scale is
// X = 2^(floor(log2(amax)) - emax_elem), clamped to E8M0's range 2^-127 .. 2^127, where
// emax_elem is the exponent of the element format's largest normal (E4M3: 448 = 1.75 x 2^8,
// so 8; E5M2: 57344 = 1.75 x 2^15, so 15; E2M1: 6 = 1.5 x 2^2, so 2); each element is x / X
// rounded to the element format to nearest even, clamped (saturated) to its largest magnitude
// (the spec's "clamping normal numbers": x / X < 2^(emax_elem + 1) can round past the largest
// normal). An all-zero block has no log2(amax) and gets the smallest scale, 0x00, as
// torchao's to_mx (FLOOR mode) does.
int mx_emax_elem(DType dtype) {
  switch (dtype) {
    case DType::mxfp8: return 8;
    case DType::mxfp8_e5m2: return 15;
    default: return 2;  // mxfp4
  }
}
void quantize_mx(DType dtype, const float* x, uint8_t* block) {
  float amax = 0.0f;
  for (int64_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
  int exponent = -127;
  if (amax > 0.0f) {
    int frexp_exponent = 0;
    std::frexp(amax, &frexp_exponent);  // amax = m x 2^e, m in [0.5, 1): floor(log2) = e - 1
    exponent = std::clamp(frexp_exponent - 1 - mx_emax_elem(dtype), -127, 127);
  }
  block[0] = static_cast<uint8_t>(exponent + 127);
  for (int64_t j = 0; j < kBlock; ++j) {
    // x / X is exact in double, and in f32 unless below 2^-126, where every element format
    // rounds to +-0 anyway (their smallest nonzero magnitudes are 2^-9, 2^-16 and 0.5).
    const float scaled = static_cast<float>(std::ldexp(static_cast<double>(x[j]), -exponent));
    if (dtype == DType::mxfp8) {
      block[1 + j] = f32_to_f8_e4m3fn(scaled);  // saturating to +-448 (docs/numerics.md)
    } else if (dtype == DType::mxfp8_e5m2) {
      // f32_to_f8_e5m2 overflows to +-Inf (0x7C, 0xFC) as torch does; MX clamps to +-57344.
      const uint8_t code = f32_to_f8_e5m2(scaled);
      block[1 + j] = (code & 0x7F) == 0x7C ? static_cast<uint8_t>((code & 0x80) | 0x7B) : code;
    } else {
      set_pair_code(block + 1, j, f32_to_f4_e2m1(scaled));  // saturating to +-6
    }
  }
}

// A block holding a NaN or an Inf: a NaN scale and zero elements, so that every value of the
// block decodes as NaN (neither ggml's f16 scale times a finite q nor an MX scale can say
// which element it was). ggml's reference leaves this case to undefined float-to-int casts.
void write_nan_block(DType dtype, uint8_t* block) {
  std::memset(block, 0, static_cast<size_t>(info(dtype).block_bits / 8));
  switch (dtype) {
    case DType::q8_0: store_as<uint16_t>(block, 0, 0x7E00); break;
    case DType::q4_0:
      store_as<uint16_t>(block, 0, 0x7E00);
      std::memset(block + 2, 0x88, 16);  // q = 8: the element 0
      break;
    default: block[0] = 0xFF; break;  // mxfp8, mxfp8_e5m2, mxfp4
  }
}

}  // namespace

Status quantize_row(DType dtype, const float* src, int64_t n, void* dst) {
  if (!is_block_format(dtype))
    return Status::unsupported(std::string("quantize_row: ") + dtype_name(dtype) +
                               " is not a block format (store_element encodes its values)");
  if (n < 0 || n % kBlock != 0)
    return Status::bad_input("quantize_row: " + std::to_string(n) + " values of " + dtype_name(dtype) +
                             " are not a whole number of 32-value blocks");
  auto* out = static_cast<uint8_t*>(dst);
  const int64_t bytes = block_bytes(dtype);
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* x = src + b * kBlock;
    uint8_t* block = out + b * bytes;
    if (!std::all_of(x, x + kBlock, [](float v) { return std::isfinite(v); })) {
      write_nan_block(dtype, block);
    } else if (dtype == DType::q8_0) {
      quantize_q8_0(x, block);
    } else if (dtype == DType::q4_0) {
      quantize_q4_0(x, block);
    } else {
      quantize_mx(dtype, x, block);
    }
  }
  return Status::ok();
}

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
    case DType::f8_e8m0: return f8_e8m0_to_f32(load_as<uint8_t>(base, index));
    case DType::f4_e2m1: return f4_e2m1_to_f32(pair_code(static_cast<const uint8_t*>(base), index));
    case DType::q8_0:
    case DType::q4_0:
    case DType::mxfp8:
    case DType::mxfp8_e5m2:
    case DType::mxfp4: return load_block_element(base, dtype, index);
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
    case DType::f8_e8m0: store_as<uint8_t>(base, index, f32_to_f8_e8m0(as_f32())); return;
    case DType::f4_e2m1: set_pair_code(static_cast<uint8_t*>(base), index, f32_to_f4_e2m1(as_f32())); return;
    case DType::q8_0:
    case DType::q4_0:
    case DType::mxfp8:
    case DType::mxfp8_e5m2:
    case DType::mxfp4:
      contract_violation(std::string("store_element: ") + dtype_name(dtype) +
                         " is a block format; quantise whole blocks with quantize_row");
  }
}

}  // namespace dnnb
