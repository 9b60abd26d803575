// The element types a safetensors header may name: every dtype the format defines, sub-byte
// ones included. Separate from the compute DType (core/dtype.h): a file may hold tensors the
// suite does not compute in (F4, U16, C64, ...); inspect decodes them for statistics, and
// SafetensorsFile::load refuses them with a message.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace dnnb {

enum class SafetensorsDType : uint8_t {
  boolean,      // BOOL, one byte
  u8, i8, u16, i16, u32, i32, u64, i64,
  f4,           // F4: OCP E2M1, two elements per byte (element 2k in the low nibble)
  f6_e2m3,      // F6_E2M3: OCP MX FP6, 6 bits
  f6_e3m2,      // F6_E3M2: OCP MX FP6, 6 bits
  f8_e4m3,      // F8_E4M3: torch float8_e4m3fn
  f8_e5m2,      // F8_E5M2
  f8_e8m0,      // F8_E8M0: unsigned power of two, torch float8_e8m0fnu
  f8_e4m3fnuz,  // F8_E4M3FNUZ
  f8_e5m2fnuz,  // F8_E5M2FNUZ
  f16, bf16, f32, f64,
  c64,          // C64: complex, two F32 (real, imaginary)
};

// Every file dtype, in enum order.
const std::vector<SafetensorsDType>& all_safetensors_dtypes();
// The header name ("F8_E8M0"); case-sensitive, as the format is.
const char* safetensors_name(SafetensorsDType dtype);
std::optional<SafetensorsDType> parse_safetensors_name(std::string_view name);
// "BOOL, U8, ..., C64": every header name, for error messages.
std::string safetensors_name_list();
// Bits per element: a tensor holds numel * bits bits, which must be a whole number of bytes.
unsigned safetensors_bits(SafetensorsDType dtype);

// The compute dtype holding the same values, when the suite computes in it.
std::optional<DType> compute_dtype_of(SafetensorsDType dtype);
// The file dtype a compute tensor is written as; none for the block formats (q8_0, q4_0,
// mxfp8, mxfp4), which the format cannot hold.
std::optional<SafetensorsDType> safetensors_dtype_of(DType dtype);
// The header name a compute tensor is written with: "F32", "BF16", "F8_E4M3", ...; null for
// the block formats.
const char* safetensors_dtype_name(DType dtype);
// The compute dtype of a header name (case-sensitive, as the format says); nothing for names
// that are not dtypes and for file dtypes the suite does not compute in.
std::optional<DType> dtype_from_safetensors(std::string_view name);

// Decoding for statistics. Values per element: 2 for C64 (real, imaginary), else 1.
unsigned safetensors_values_per_element(SafetensorsDType dtype);
// False for the F6 formats: the format fixes their 6-bit encoding but not how four of them
// are packed into three bytes, so no byte order can be assumed.
bool safetensors_decodable(SafetensorsDType dtype);
// Value `index` (counting values, so C64 element i is values 2i and 2i+1) of a tensor whose
// bytes start at `data`, as double (exact for every decodable format except U64/I64 above
// 2^53). Reads through memcpy: any alignment. Only for decodable dtypes.
double decode_safetensors_value(const uint8_t* data, SafetensorsDType dtype, uint64_t index);
// Whether the dtype holds floating-point values (for how inspect prints statistics).
bool safetensors_floating(SafetensorsDType dtype);

}  // namespace dnnb
