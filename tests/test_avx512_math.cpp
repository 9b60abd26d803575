// Accuracy of the AVX-512 vector functions (kernels/avx512/avx512_math.h) against the f64 C
// library over dense sweeps, and the bf16/f16 vector encoders against the scalar (torch)
// ones. Bounds are the measured maxima in docs/avx512.md with ~1.5x headroom.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "devices/cpu/cpu_features.h"
#include "kernels/avx512/avx512_math.h"

namespace dnnb::avx512 {
namespace {

bool usable() { return cpu_status().is_ok(); }

// The largest error of vector_fn against the f64 reference over `points` evenly spaced x in
// [lo, hi), by `error(out, exact)` (ulps of f32, or relative); exact results below the smallest
// normal are skipped (neither measure is relative there); a NaN error counts as the worst.
struct Sweep {
  double max = 0;
  float worst_x = 0;
};

template <class F, class R, class E>
DNNB_AVX512 Sweep sweep_error(F vector_fn, R reference, float lo, float hi, int64_t points, E error) {
  Sweep s;
  alignas(64) float in[16], out[16];
  for (int64_t i = 0; i < points; i += 16) {
    for (int k = 0; k < 16; ++k) in[k] = lo + (hi - lo) * static_cast<float>(static_cast<double>(i + k) / points);
    _mm512_store_ps(out, vector_fn(_mm512_load_ps(in)));
    for (int k = 0; k < 16; ++k) {
      const double e = reference(static_cast<double>(in[k]));
      if (!(std::fabs(e) >= 0x1p-126)) continue;
      const double err = error(out[k], e);
      if (!(err <= s.max)) s = {err, in[k]};
    }
  }
  return s;
}

double ulp_error(float out, double e) {
  const float ef = static_cast<float>(std::fabs(e));
  return std::fabs(out - e) / (std::nextafter(ef, INFINITY) - ef);
}
double rel_error(float out, double e) { return std::fabs(out - e) / std::fabs(e); }

template <class F, class R>
DNNB_AVX512 Sweep sweep(F vector_fn, R reference, float lo, float hi, int64_t points) {
  return sweep_error(vector_fn, reference, lo, hi, points, ulp_error);
}
template <class F, class R>
DNNB_AVX512 Sweep rel_sweep(F vector_fn, R reference, float lo, float hi, int64_t points) {
  return sweep_error(vector_fn, reference, lo, hi, points, rel_error);
}

// The f32 tier `full` (every f32 output), in ulps of f32. A typed suite, like the 16-bit one
// below, so another f32 tier can be held to the same bounds.
template <Accuracy A>
struct Tier {
  static constexpr Accuracy value = A;
};
template <class T>
class Avx512MathF32 : public ::testing::Test {};
struct TierName {
  template <class T>
  static std::string GetName(int) {
    switch (T::value) {
      case Accuracy::full: return "full";
      case Accuracy::half: return "half";
    }
    return "?";
  }
};
using F32Tiers = ::testing::Types<Tier<Accuracy::full>>;
TYPED_TEST_SUITE(Avx512MathF32, F32Tiers, TierName);

template <Accuracy A>
DNNB_AVX512 __m512 v_exp(__m512 x) { return exp_v<A>(Vecs<1>{{x}}).v[0]; }
template <Accuracy A>
DNNB_AVX512 __m512 v_tanh(__m512 x) { return tanh_v<A>(Vecs<1>{{x}}).v[0]; }
template <Accuracy A>
DNNB_AVX512 __m512 v_sigmoid(__m512 x) { return sigmoid_v<A>(Vecs<1>{{x}}).v[0]; }
template <Accuracy A>
DNNB_AVX512 __m512 v_gelu(__m512 x) { return _mm512_mul_ps(x, normal_cdf_v<A>(Vecs<1>{{x}}).v[0]); }
template <Accuracy A>
DNNB_AVX512 __m512 v_gelu_tanh(__m512 x) { return gelu_tanh_v<A>(Vecs<1>{{x}}).v[0]; }

// f(x) on all lanes, lane 0 back as a float (for tests that are not AVX-512 functions).
template <class F>
DNNB_AVX512 float at(F f, float x) { return _mm512_cvtss_f32(f(_mm512_set1_ps(x))); }

constexpr int64_t kPoints = 1 << 20;

TYPED_TEST(Avx512MathF32, Exp) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_exp<TypeParam::value>, [](double x) { return std::exp(x); }, -87.3f, 88.7f, kPoints);
  EXPECT_LE(s.max, 1.5) << "at x = " << s.worst_x;
}

TYPED_TEST(Avx512MathF32, Tanh) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_tanh<TypeParam::value>, [](double x) { return std::tanh(x); }, -10.0f, 10.0f, kPoints);
  EXPECT_LE(s.max, 2.0) << "at x = " << s.worst_x;
  // Out to where e^{2|x|} overflows to Inf (|x| > 44): the result must still be +-1.
  Sweep far = sweep(v_tanh<TypeParam::value>, [](double x) { return std::tanh(x); }, -60.0f, 60.0f, kPoints / 16);
  EXPECT_LE(far.max, 2.0) << "at x = " << far.worst_x;
}

TYPED_TEST(Avx512MathF32, Sigmoid) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_sigmoid<TypeParam::value>, [](double x) { return 1 / (1 + std::exp(-x)); }, -87.0f, 30.0f, kPoints);
  EXPECT_LE(s.max, 3.5) << "at x = " << s.worst_x;
}

TYPED_TEST(Avx512MathF32, GeluErf) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_gelu<TypeParam::value>, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -3.0f, 3.0f, kPoints);
  EXPECT_LE(s.max, 9.0) << "at x = " << s.worst_x;
}

// Phi is one formula on both signs (erfc(z) e^{z^2} fitted in t = 1/(1 + z/2) down to z = 0):
// the negative tail keeps relative accuracy down to x = -14 (docs/avx512.md: 9.6 ulp).
TYPED_TEST(Avx512MathF32, GeluErfTails) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_gelu<TypeParam::value>, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -14.0f, 14.0f, kPoints);
  EXPECT_LE(s.max, 14.0) << "at x = " << s.worst_x;
}

// The special values every tier gives exactly: NaN stays NaN, the infinities give the limits.
template <Accuracy A>
void expect_special_values_of_every_tier() {
  EXPECT_TRUE(std::isnan(at(v_exp<A>, NAN)));
  EXPECT_EQ(at(v_exp<A>, -INFINITY), 0.0f);
  EXPECT_EQ(at(v_exp<A>, INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(at(v_tanh<A>, NAN)));
  EXPECT_EQ(at(v_sigmoid<A>, -INFINITY), 0.0f);
  EXPECT_EQ(at(v_sigmoid<A>, INFINITY), 1.0f);
  EXPECT_TRUE(std::isnan(at(v_sigmoid<A>, NAN)));
  EXPECT_EQ(at(v_gelu<A>, INFINITY), INFINITY);
  EXPECT_EQ(at(v_gelu<A>, 0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(at(v_gelu<A>, NAN)));
}

TYPED_TEST(Avx512MathF32, SpecialValues) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  constexpr Accuracy A = TypeParam::value;
  expect_special_values_of_every_tier<A>();
  for (float x : {-INFINITY, -1e30f, -50.0f, -10.0f}) {
    EXPECT_EQ(at(v_tanh<A>, x), -1.0f) << x;
    EXPECT_EQ(at(v_tanh<A>, -x), 1.0f) << -x;
  }
}

// ---- The 16-bit tiers -------------------------------------------------------------------
// `half` (the default for f16/bf16 outputs), in relative error, which is what the final
// rounding to 16 bits sees: bounds are the maxima measured for `half` (docs/avx512.md) with
// ~1.5x headroom. (A typed suite, so another 16-bit tier can be held to the same bounds.)

template <class T>
class Avx512MathHalf : public ::testing::Test {};
using HalfTiers = ::testing::Types<Tier<Accuracy::half>>;
TYPED_TEST_SUITE(Avx512MathHalf, HalfTiers, TierName);

double gelu_erf_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
// x sigmoid(2u), not 0.5 x (1 + tanh u): in f64 too, 1 + tanh u cancels for u << 0 (x = -7.2:
// 1 + tanh(-19.06) = 5.6e-17 is below f64's resolution at 1, which would put the reference off
// by 50%).
double gelu_tanh_ref(double x) { return x / (1 + std::exp(-2 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); }

TYPED_TEST(Avx512MathHalf, Exp) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = rel_sweep(v_exp<TypeParam::value>, [](double x) { return std::exp(x); }, -87.3f, 88.7f, kPoints);
  EXPECT_LE(s.max, 4.7e-6) << "at x = " << s.worst_x;  // measured 3.1e-6
}

TYPED_TEST(Avx512MathHalf, Sigmoid) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = rel_sweep(v_sigmoid<TypeParam::value>, [](double x) { return 1 / (1 + std::exp(-x)); }, -87.0f, 30.0f, kPoints);
  EXPECT_LE(s.max, 4.7e-6) << "at x = " << s.worst_x;  // measured 3.1e-6
}

TYPED_TEST(Avx512MathHalf, Tanh) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = rel_sweep(v_tanh<TypeParam::value>, [](double x) { return std::tanh(x); }, -4.5f, 4.5f, kPoints);
  EXPECT_LE(s.max, 3.5e-6) << "at x = " << s.worst_x;  // measured 2.3e-6
  // Beyond, x is clamped to +-5: tanh(5) = 1 - 9.1e-5, which rounds to 1 in f16 and bf16.
  Sweep far = rel_sweep(v_tanh<TypeParam::value>, [](double x) { return std::tanh(x); }, -60.0f, 60.0f, kPoints / 16);
  EXPECT_LE(far.max, 1e-4) << "at x = " << far.worst_x;
}

TYPED_TEST(Avx512MathHalf, GeluErf) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = rel_sweep(v_gelu<TypeParam::value>, gelu_erf_ref, -13.0f, 6.0f, kPoints);
  EXPECT_LE(s.max, 1.1e-5) << "at x = " << s.worst_x;  // measured 7.3e-6
}

TYPED_TEST(Avx512MathHalf, GeluTanh) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  // From -9 up: below, sigmoid(2u) < 2^-118 and its last bits go to f32 subnormals on the way
  // to a normal product (x = -10: 2u = -87.3, e^2u = 1.2e-38), where PyTorch's own f32 form
  // 0.5 x (1 + tanh u) has already cancelled to 0.
  Sweep s = rel_sweep(v_gelu_tanh<TypeParam::value>, gelu_tanh_ref, -9.0f, 10.0f, kPoints);
  EXPECT_LE(s.max, 2.3e-5) << "at x = " << s.worst_x;  // measured 1.5e-5 on [-10, 10] (u's rounding)
}

TYPED_TEST(Avx512MathHalf, SpecialValues) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  constexpr Accuracy A = TypeParam::value;
  expect_special_values_of_every_tier<A>();
  EXPECT_NEAR(at(v_tanh<A>, INFINITY), 1.0f, 1e-4);  // tanh(5): x is clamped to +-5
  EXPECT_NEAR(at(v_tanh<A>, -INFINITY), -1.0f, 1e-4);
  EXPECT_EQ(at(v_gelu_tanh<A>, INFINITY), INFINITY);
  EXPECT_EQ(at(v_gelu_tanh<A>, 0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(at(v_gelu_tanh<A>, NAN)));
}

// exp_minus_half(s) claims to be exp_clamped<half>(-s/2) bit for bit (the halving folded into
// its constants): every f32 s in [0, 400] at a stride, and NaN.
DNNB_AVX512 int64_t exp_minus_half_mismatches() {
  int64_t bad = 0;
  alignas(64) float in[16], folded[16], plain[16];
  for (uint32_t bits = 0; bits <= 0x43c80000u; bits += 16 * 7) {  // 0x43c80000 = 400.0f
    for (int k = 0; k < 16; ++k) {
      const uint32_t b = bits + 7u * static_cast<uint32_t>(k);
      std::memcpy(&in[k], &b, 4);
    }
    const __m512 s = _mm512_load_ps(in);
    _mm512_store_ps(folded, exp_minus_half(Vecs<1>{{s}}).v[0]);
    _mm512_store_ps(plain, exp_clamped<Accuracy::half>(Vecs<1>{{_mm512_mul_ps(s, _mm512_set1_ps(-0.5f))}}).v[0]);
    bad += std::memcmp(folded, plain, sizeof folded) != 0;
  }
  if (!std::isnan(_mm512_cvtss_f32(exp_minus_half(Vecs<1>{{_mm512_set1_ps(NAN)}}).v[0]))) ++bad;
  return bad;
}

TEST(Avx512Math, ExpMinusHalfMatchesExpOfMinusHalf) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  EXPECT_EQ(exp_minus_half_mismatches(), 0);
}

// Every f32 in a stride over all bit patterns (plus all subnormal-range edges) through the
// vector encoders must equal the scalar encoders bit for bit (NaN: both NaN).
template <class Fmt>
DNNB_AVX512 int64_t encoder_mismatches(uint16_t (*scalar)(float)) {
  int64_t bad = 0;
  alignas(64) uint32_t bits[16];
  alignas(64) uint16_t got[16];
  for (uint64_t base = 0; base < (1ull << 32); base += 16 * 4099) {
    for (int k = 0; k < 16; ++k) bits[k] = static_cast<uint32_t>(base + k * 4099u) ^ (k & 1 ? 0x007fffffu : 0u);
    __m512 v = _mm512_castsi512_ps(_mm512_load_si512(bits));
    Fmt::store(got, v);
    for (int k = 0; k < 16; ++k) {
      float f;
      std::memcpy(&f, &bits[k], 4);
      const uint16_t want = scalar(f);
      const bool both_nan = std::isnan(f);
      if (!both_nan && got[k] != want) ++bad;
    }
  }
  return bad;
}

TEST(Avx512Math, Bf16AndF16EncodersMatchTorch) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  EXPECT_EQ(encoder_mismatches<BF16>(f32_to_bf16), 0);
  EXPECT_EQ(encoder_mismatches<F16>(f32_to_f16), 0);
}

}  // namespace
}  // namespace dnnb::avx512
