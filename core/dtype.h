// Number formats and scalar conversions, bit-exact with PyTorch's tensor.to(dtype) on CPU
// (see docs/numerics.md and ../shared/NUMERICS.md for the edge behaviour of each format).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace dnnb {

enum class DType : uint8_t { f32, f16, bf16, f8_e4m3fn, f8_e5m2, i8, u8, i32, i64, f64, boolean };

// Every dtype, in enum order (for listings and tests).
const std::vector<DType>& all_dtypes();

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);               // "f32", "bf16", "f8_e4m3fn", ...
std::optional<DType> parse_dtype(std::string_view name);
bool is_floating(DType dtype);

// Scalar conversions. Encoders round to nearest even; overflow, NaN and Inf follow torch
// per format as the fixture's torch does (docs/numerics.md): f16 and e5m2 overflow to Inf; e4m3fn has
// no Inf and, in torch >= 2.15 (the fixture's), saturates overflow and Inf to +-448 (older torch: NaN).
float f16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);
float f8_e4m3fn_to_f32(uint8_t bits);
uint8_t f32_to_f8_e4m3fn(float value);
float f8_e5m2_to_f32(uint8_t bits);
uint8_t f32_to_f8_e5m2(float value);

// Element access by dtype, for references and checkers (slow path, clarity first).
// `index` counts elements from `base`. Floating stores go through f32 then the format
// (as torch does for a float32 result cast to the dtype); integer stores truncate toward
// zero as torch's .to(int) does.
double load_element(const void* base, DType dtype, int64_t index);
void store_element(void* base, DType dtype, int64_t index, double value);

}  // namespace dnnb
