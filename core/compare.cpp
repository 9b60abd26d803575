#include "core/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace dnnb {

std::string Tolerance::describe() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "rtol=%.2g atol=%.2g", rtol, atol);
  return buf;
}

double dtype_epsilon(DType dtype) {
  switch (dtype) {
    case DType::f32: return 0x1p-23;
    case DType::f16: return 0x1p-10;
    case DType::bf16: return 0x1p-7;
    case DType::f8_e4m3fn: return 0x1p-3;
    case DType::f8_e5m2: return 0x1p-2;
    case DType::f64: return 0x1p-52;
    default: return 0;  // integers: exact
  }
}

namespace {
double smallest_subnormal(DType dtype) {
  switch (dtype) {
    case DType::f32: return 0x1p-149;
    case DType::f16: return 0x1p-24;
    case DType::bf16: return 0x1p-133;
    case DType::f8_e4m3fn: return 0x1p-9;
    case DType::f8_e5m2: return 0x1p-16;
    default: return 0;
  }
}

// Relative tolerance in units of the dtype's epsilon, per op class. For f32 the budget is
// the f32 arithmetic inside the kernel; for f16/bf16 the final rounding dominates (half an
// ulp) plus one flip of that rounding caused by f32 arithmetic: 1 ulp, 2 where the op has
// two rounded stages (normalisations scale by a weight after normalising).
double rtol_ulps(ToleranceClass c, DType dtype) {
  const bool f32 = dtype == DType::f32;
  switch (c) {
    case ToleranceClass::selection: return 0;
    case ToleranceClass::exact: return 1;
    case ToleranceClass::elementwise: return f32 ? 32 : 1;
    case ToleranceClass::reduction: return f32 ? 64 : 1;
    case ToleranceClass::normalization: return f32 ? 64 : 2;
    case ToleranceClass::loss: return f32 ? 64 : 2;
    case ToleranceClass::dot_product: return 1;  // not used: dot_product_tolerance
    case ToleranceClass::attention: return 1;    // not used: OpSpec::output_bounds
    case ToleranceClass::block: return 1;        // not used: OpSpec::output_bounds (docs/blocks.md)
  }
  return 1;
}

// Total order on the dtype's encodings, for ULP distance.
int64_t ordered_bits(double v, DType dtype) {
  int64_t bits = 0;
  int64_t sign_mask = 0;
  switch (dtype) {
    case DType::f32: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = u;
      sign_mask = 0x80000000ll;
      break;
    }
    case DType::f16: bits = f32_to_f16(static_cast<float>(v)); sign_mask = 0x8000; break;
    case DType::bf16: bits = f32_to_bf16(static_cast<float>(v)); sign_mask = 0x8000; break;
    default: return static_cast<int64_t>(v);
  }
  return (bits & sign_mask) ? -(bits & (sign_mask - 1)) : bits;
}

std::string coord_of(int64_t flat, const Shape& shape) {
  std::string s = "[";
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}
}  // namespace

Tolerance tolerance_for(ToleranceClass c, DType dtype, double expected_rms) {
  Tolerance t;
  t.rtol = rtol_ulps(c, dtype) * dtype_epsilon(dtype);
  // selection: no rounding happens, so any difference (one ulp, one subnormal step) is a bug.
  if (c == ToleranceClass::selection) return t;
  t.atol = c == ToleranceClass::exact ? smallest_subnormal(dtype) : t.rtol * expected_rms;
  if (t.atol < smallest_subnormal(dtype)) t.atol = smallest_subnormal(dtype);
  return t;
}

Tolerance dot_product_tolerance(DType output, const DotProductError& error, double magnitude_rms) {
  // lambda: the probabilistic bound's constant, chosen so that the largest error over an output
  // of up to 10^8 elements stays inside it, with room for accumulators that truncate instead of
  // rounding (tensor cores) on the first few thousand products.
  constexpr double kLambda = 8;
  constexpr double kF32UnitRoundoff = 0x1p-24;
  Tolerance t;
  t.rtol = dtype_epsilon(output);
  const double k = static_cast<double>(std::max<int64_t>(error.length, 1));
  const double run = static_cast<double>(std::min(std::max<int64_t>(error.chunk_length, 0), error.length));
  t.atol = kLambda *
           (std::sqrt(k) * kF32UnitRoundoff + std::sqrt(run) * error.chunk_unit_roundoff + 2 * error.input_unit_roundoff) *
           magnitude_rms;
  if (t.atol < smallest_subnormal(output)) t.atol = smallest_subnormal(output);
  return t;
}

Metrics compare_outputs(const Tensor& got, const Tensor& expected, const Tolerance& tol) {
  Metrics m;
  auto got_rows = row_index(got);
  const int64_t n = expected.numel();
  m.count = n;
  if (!got_rows || n == 0) return m;
  const auto* exp_data = static_cast<const double*>(expected.host_data());
  const auto* got_base = static_cast<const char*>(got.buffer->handle);
  double err2 = 0, ref2 = 0;
  int64_t zeros = 0, exp_zeros = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = i / got_rows->cols, c = i % got_rows->cols;
    const double g = load_element(got_base, got.dtype, got_rows->offset + got_rows->row_offset(r) + c * got_rows->col_stride);
    const double e = exp_data[i];
    if (g == 0) ++zeros;
    if (e == 0) ++exp_zeros;
    if (std::isnan(g) || std::isnan(e)) {
      if (std::isnan(g) != std::isnan(e)) {
        ++m.nan_mismatch;
        if (m.worst_ratio < std::numeric_limits<double>::infinity()) {
          m.worst_ratio = std::numeric_limits<double>::infinity();
          m.worst_coord = coord_of(i, expected.shape);
          m.worst_got = g;
          m.worst_expected = e;
        }
      }
      continue;
    }
    if (std::isinf(g) || std::isinf(e)) {
      if (g != e) {
        ++m.inf_mismatch;
        m.worst_ratio = std::numeric_limits<double>::infinity();
        m.worst_coord = coord_of(i, expected.shape);
        m.worst_got = g;
        m.worst_expected = e;
      }
      continue;
    }
    const double err = std::fabs(g - e);
    const double allowed = tol.atol + tol.rtol * std::fabs(e);
    m.max_abs = std::max(m.max_abs, err);
    if (e != 0) m.max_rel = std::max(m.max_rel, err / std::fabs(e));
    err2 += err * err;
    ref2 += e * e;
    const int64_t ulp = std::llabs(ordered_bits(g, got.dtype) - ordered_bits(e, got.dtype));
    m.max_ulp = std::max(m.max_ulp, ulp);
    const double ratio = allowed > 0 ? err / allowed : (err > 0 ? std::numeric_limits<double>::infinity() : 0);
    if (err > allowed) ++m.violations;
    if (ratio > m.worst_ratio) {
      m.worst_ratio = ratio;
      m.worst_coord = coord_of(i, expected.shape);
      m.worst_got = g;
      m.worst_expected = e;
    }
  }
  m.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  m.zero_fraction = static_cast<double>(zeros) / n;
  m.expected_zero_fraction = static_cast<double>(exp_zeros) / n;
  return m;
}

bool metrics_pass(const Metrics& m, std::string* why) {
  char buf[256];
  if (m.nan_mismatch > 0 || m.inf_mismatch > 0) {
    std::snprintf(buf, sizeof buf, "%lld NaN and %lld Inf mismatches (unwritten outputs read as NaN poison)",
                  static_cast<long long>(m.nan_mismatch), static_cast<long long>(m.inf_mismatch));
    if (why) *why = buf;
    return false;
  }
  // benchdnn's "mistrusted" rule: an output that is mostly zeros where the expected values
  // are not proves little even when it is within tolerance.
  if (m.count >= 16 && m.zero_fraction > 0.9 && m.expected_zero_fraction < 0.5) {
    std::snprintf(buf, sizeof buf, "mistrusted: %.0f%% of the output is zero, %.0f%% of the expected",
                  100 * m.zero_fraction, 100 * m.expected_zero_fraction);
    if (why) *why = buf;
    return false;
  }
  if (m.violations > 0) {
    std::snprintf(buf, sizeof buf, "%lld of %lld elements outside tolerance; worst at %s: got %.9g, expected %.9g (%.3gx the allowed error)",
                  static_cast<long long>(m.violations), static_cast<long long>(m.count), m.worst_coord.c_str(),
                  m.worst_got, m.worst_expected, m.worst_ratio);
    if (why) *why = buf;
    return false;
  }
  return true;
}

}  // namespace dnnb
