// Number formats: names, storage traits (values and bytes per block), scalar conversions
// bit-exact with PyTorch's tensor.to(dtype) on CPU, and the block formats' decode and
// quantise rules (see docs/numerics.md and ../shared/NUMERICS.md for the edge behaviour of
// each format).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace dnnb {

// New dtypes go at the end: the numbering of the earlier ones stays as it was.
enum class DType : uint8_t {
  f32, f16, bf16, f8_e4m3fn, f8_e5m2, i8, u8, i32, i64, f64, boolean,
  f8_e8m0,  // OCP E8M0: 2^(code - 127), 0xFF NaN, no sign, no zero (torch float8_e8m0fnu)
  f4_e2m1,  // OCP FP4 E2M1: +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}, two per byte, element 2k low nibble
  q8_0,     // ggml: f16 scale d, 32 int8 q; value d * q (34 bytes a block)
  q4_0,     // ggml: f16 scale d, 32 4-bit q; value d * (q - 8) (18 bytes a block)
  mxfp8,    // OCP MXFP8: E8M0 scale, 32 FP8 E4M3 elements (33 bytes a block)
  mxfp4,    // OCP MXFP4: E8M0 scale, 32 FP4 E2M1 elements, two per byte (17 bytes a block)
  mxfp8_e5m2,  // OCP MXFP8 with E5M2 elements: E8M0 scale, 32 FP8 E5M2 elements (33 bytes a block)
};

// Every dtype, in enum order (for listings and tests).
const std::vector<DType>& all_dtypes();

const char* dtype_name(DType dtype);               // "f32", "bf16", "f8_e4m3fn", "q8_0", ...
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType dtype);

// ---- Storage ------------------------------------------------------------------------------
// Every dtype stores its values in blocks: block_values(dtype) values in block_bits(dtype)
// bits. A scalar format's block is one value; f4_e2m1 packs two 4-bit values to a byte. The
// block formats (q8_0, q4_0, mxfp8, mxfp8_e5m2, mxfp4) hold 32 values and one scale per block; a tensor
// of one keeps its last dim a multiple of 32 and contiguous (core/tensor.h), so its rows are
// whole blocks.
bool is_block_format(DType dtype);   // block_values(dtype) > 1
int64_t block_values(DType dtype);   // 1 for scalar formats, 32 for the block formats
int64_t block_bits(DType dtype);     // 4 for f4_e2m1, else 8 * block_bytes
int64_t block_bytes(DType dtype);    // 34 q8_0, 18 q4_0, 33 mxfp8(_e5m2), 17 mxfp4; a scalar format's
                                     // bytes per value (f4_e2m1: 1, a lone value fills a byte)

// The one byte count: the bytes `numel` values of `dtype` take, counted from a block start.
// Every buffer size, copy length and byte offset in the suite is this function. Precondition:
// numel >= 0 and, for a block format, a whole number of blocks (numel % 32 == 0); a violation
// is a bug in the caller (tensors keep whole blocks by construction) and aborts with a
// message. Sub-byte formats round up: 3 values of f4_e2m1 take 2 bytes.
size_t storage_bytes(DType dtype, int64_t numel);
// True when value `index` (counted from a block start) starts a byte of its own, so that
// storage_bytes(dtype, index) is its byte offset: any index of a whole-byte scalar format, an
// even index of f4_e2m1, a multiple of 32 for a block format.
bool starts_storage_unit(DType dtype, int64_t index);

// Bytes per value of a whole-byte scalar format, for code that strides one value at a time.
// Aborts for f4_e2m1 and the block formats, which have no per-value byte size; byte counts
// go through storage_bytes.
size_t dtype_size(DType dtype);

// ---- Scalar conversions -------------------------------------------------------------------
// Encoders round to nearest even; overflow, NaN and Inf follow torch per format as the
// fixture's torch does (docs/numerics.md): f16 and e5m2 overflow to Inf; e4m3fn has no Inf
// and, in torch >= 2.15 (the fixture's), saturates overflow and Inf to +-448 (older torch: NaN).
float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float f8_e4m3fn_to_f32(uint8_t bits);
uint8_t f32_to_f8_e4m3fn(float value);
float f8_e5m2_to_f32(uint8_t bits);
uint8_t f32_to_f8_e5m2(float value);
// E8M0: 2^(bits - 127); 0x00 is 2^-127 (an f32 subnormal), 0xFF NaN. The encoder is torch's
// float8_e8m0fnu cast: the sign is dropped, the exponent rounds up when the f32 mantissa is
// past half (at exactly half: up for a normal f32, down for a subnormal), 0 and anything
// below 2^-127 give 0x00, and NaN, Inf and values rounding past 2^127 give 0xFF.
float f8_e8m0_to_f32(uint8_t bits);
uint8_t f32_to_f8_e8m0(float value);
// E2M1 (the low 4 bits of `bits`): sign, 2 exponent bits (bias 1), 1 mantissa bit; no Inf,
// no NaN. The encoder rounds to nearest even and saturates: |x| > 6 (after rounding), +-Inf
// and NaN give +-6 with the input's sign (torch has no cast to it; this is the OCP MX
// element conversion's saturation, docs/numerics.md).
float f4_e2m1_to_f32(uint8_t bits);
uint8_t f32_to_f4_e2m1(float value);

// ---- Elements -----------------------------------------------------------------------------
// Element access by dtype, for references and checkers (slow path, clarity first).
// `index` counts elements from `base`, which must be a block start (any byte for whole-byte
// scalar formats). Floating stores go through f32 then the format (as torch does for a
// float32 result cast to the dtype); integer stores truncate toward zero as torch's
// .to(int) does.
// load_element decodes any element of a block format by the format's rule (value = scale x
// element, docs/numerics.md). store_element refuses a block format (aborts with a message):
// a block is quantised as a whole, by quantize_row.
double load_element(const void* base, DType dtype, int64_t index);
void store_element(void* base, DType dtype, int64_t index, double value);

// Quantises n values (a multiple of 32) into n / 32 blocks of a block format at `dst`:
// q8_0 and q4_0 as ggml's reference quantizers do, mxfp8, mxfp8_e5m2 and mxfp4 by the OCP MX v1.0
// conversion (docs/numerics.md gives each rule). A block holding a NaN or an Inf gets a NaN
// scale and zero elements, so every one of its values decodes as NaN. bad_input when n is
// not a whole number of blocks, unsupported for a dtype that is not a block format.
Status quantize_row(DType dtype, const float* src, int64_t n, void* dst);

}  // namespace dnnb
