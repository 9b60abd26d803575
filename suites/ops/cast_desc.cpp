#include "suites/ops/cast_desc.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace dnnb::ops {
namespace {

// The largest finite positive encoding of a narrow target (its magnitude bits).
uint32_t max_finite_code(DType target) {
  switch (target) {
    case DType::f16: return 0x7BFF;
    case DType::bf16: return 0x7F7F;
    case DType::f8_e4m3fn: return 0x7E;
    case DType::f8_e5m2: return 0x7B;
    default: return 0;
  }
}

// log2 of the smallest subnormal and of the largest finite value, for the normals' scales.
void log2_range(DType target, int* lo, int* hi) {
  switch (target) {
    case DType::f16: *lo = -24, *hi = 15; break;
    case DType::bf16: *lo = -133, *hi = 127; break;
    case DType::f8_e4m3fn: *lo = -9, *hi = 8; break;
    case DType::f8_e5m2: *lo = -16, *hi = 15; break;
    default: *lo = -149, *hi = 127; break;
  }
}

float decode(DType dtype, uint32_t code) {
  uint8_t slot[4] = {};
  std::memcpy(slot, &code, dtype == DType::f8_e4m3fn || dtype == DType::f8_e5m2 ? 1 : 2);
  return static_cast<float>(load_element(slot, dtype, 0));
}

uint32_t bits_of(float v) { return std::bit_cast<uint32_t>(v); }

}  // namespace

const std::vector<DType>& cast_dtypes() {
  static const std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16, DType::f8_e4m3fn, DType::f8_e5m2};
  return dtypes;
}

Result<DType> cast_target(const Problem& problem) {
  if (!problem.has("y.dt")) return problem.dtype;
  auto dtype = parse_dtype(problem.get("y.dt"));
  const auto& all = cast_dtypes();
  if (!dtype || std::find(all.begin(), all.end(), *dtype) == all.end())
    return Status::bad_input(problem.op + ": y.dt=" + problem.get("y.dt") +
                             " is not one of f32, f16, bf16, f8_e4m3fn, f8_e5m2");
  return *dtype;
}

std::vector<uint32_t> cast_f32_edges(DType target) {
  std::vector<uint32_t> out;
  // Specials, with a signalling NaN and payloads.
  for (uint32_t b : {0x00000000u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FA00000u, 0x7FFFFFFFu}) {
    out.push_back(b);
    out.push_back(b | 0x80000000u);
  }
  // Every exponent field, subnormals (0) to Inf/NaN (255), with mantissas at the edges of the
  // bits that a 16-bit or 8-bit target drops.
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : {0x0u, 0x1u, 0x1FFFu, 0x2000u, 0x7FFFu, 0x8000u, 0xFFFFFu, 0x100000u, 0x3FFFFFu, 0x400000u,
                       0x400001u, 0x7FFFFFu}) {
      out.push_back((e << 23) | m);
      out.push_back((e << 23) | m | 0x80000000u);
    }
  const uint32_t max_code = max_finite_code(target);
  if (max_code == 0) return out;  // f32 -> f32: a copy
  const bool wide = max_code > 0xFF;
  for (uint32_t c = 0; c <= max_code; ++c) {
    const double a = decode(target, c);
    // The next value up: c + 1, or past the largest finite value the one the exponent range
    // would give (a + the last step), where overflow starts.
    const double b = c < max_code ? decode(target, c + 1) : a + (a - decode(target, c - 1));
    const uint32_t mid = bits_of(static_cast<float>((a + b) / 2));  // exact: a 16-bit midpoint fits f32
    for (uint32_t v : {mid - 1, mid, mid + 1}) {
      out.push_back(v);
      out.push_back(v | 0x80000000u);
    }
    if (!wide || c % 4 == 0) {
      out.push_back(bits_of(static_cast<float>(a)));
      out.push_back(bits_of(static_cast<float>(a)) | 0x80000000u);
    }
  }
  return out;
}

Status fill_cast_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng) {
  if (inputs.size() != 1) return Status::bad_input("cast: one input (x) expected");
  Tensor& x = inputs[0];
  auto target = cast_target(problem);
  if (!target) return target.status();
  const int64_t n = x.numel();
  void* data = x.host_data();
  if (x.dtype != DType::f32) {
    const size_t size = dtype_size(x.dtype);
    const uint32_t mask = size == 1 ? 0xFFu : 0xFFFFu;
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t code = static_cast<uint32_t>(i) & mask;
      std::memcpy(static_cast<char*>(data) + i * size, &code, size);  // little-endian host
    }
    return Status::ok();
  }
  const std::vector<uint32_t> edges = cast_f32_edges(*target);
  auto* bits = static_cast<uint32_t*>(data);
  const int64_t head = std::min<int64_t>(n, static_cast<int64_t>(edges.size()));
  std::copy(edges.begin(), edges.begin() + head, bits);
  int lo = 0, hi = 0;
  log2_range(*target, &lo, &hi);
  // Scales 2^(lo - 2) .. 2^(hi + 1) in turn: subnormal results, underflow to 0, overflow.
  const int span = hi - lo + 4;
  for (int64_t i = head; i < n; ++i) {
    const int k = lo - 2 + static_cast<int>((i - head) % span);
    double v = std::ldexp(rng.normal(), k);
    if (std::fabs(v) > std::numeric_limits<float>::max()) v = std::copysign(HUGE_VAL, v);  // f32 overflow
    bits[i] = bits_of(static_cast<float>(v));
  }
  return Status::ok();
}

}  // namespace dnnb::ops
