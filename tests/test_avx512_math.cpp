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

struct Sweep {
  double max_ulp = 0;
  float worst_x = 0;
};

template <class F, class R>
DNNB_AVX512 Sweep sweep(F vector_fn, R reference, float lo, float hi, int64_t points) {
  Sweep s;
  alignas(64) float in[16], out[16];
  for (int64_t i = 0; i < points; i += 16) {
    for (int k = 0; k < 16; ++k) in[k] = lo + (hi - lo) * static_cast<float>(static_cast<double>(i + k) / points);
    _mm512_store_ps(out, vector_fn(_mm512_load_ps(in)));
    for (int k = 0; k < 16; ++k) {
      const double e = reference(static_cast<double>(in[k]));
      if (!(std::fabs(e) >= 0x1p-126)) continue;  // ulp of subnormal results is not relative
      const float ef = static_cast<float>(std::fabs(e));
      const double ulp = std::fabs(out[k] - e) / (std::nextafter(ef, INFINITY) - ef);
      if (ulp > s.max_ulp) s = {ulp, in[k]};
    }
  }
  return s;
}

// The f32 functions of both f32 tiers: `full` (the default kernels) and `full_reciprocal`
// (variant avx512/rcp: quotients by reciprocal estimate and a Newton step, at most ~0.6 ulp
// more, avx512_math.h), held to the same bounds.
template <Accuracy A>
struct Tier {
  static constexpr Accuracy value = A;
};
template <class T>
class Avx512MathF32 : public ::testing::Test {};
struct TierName {
  template <class T>
  static std::string GetName(int) { return T::value == Accuracy::full ? "full" : "full_reciprocal"; }
};
using F32Tiers = ::testing::Types<Tier<Accuracy::full>, Tier<Accuracy::full_reciprocal>>;
TYPED_TEST_SUITE(Avx512MathF32, F32Tiers, TierName);

template <Accuracy A>
DNNB_AVX512 __m512 v_exp(__m512 x) { return exp_v<A>(Vecs<1>{{x}}).v[0]; }
template <Accuracy A>
DNNB_AVX512 __m512 v_tanh(__m512 x) { return tanh_v<A>(Vecs<1>{{x}}).v[0]; }
template <Accuracy A>
DNNB_AVX512 __m512 v_sigmoid(__m512 x) { return sigmoid_v<A>(Vecs<1>{{x}}).v[0]; }
template <Accuracy A>
DNNB_AVX512 __m512 v_gelu(__m512 x) { return _mm512_mul_ps(x, normal_cdf_v<A>(Vecs<1>{{x}}).v[0]); }

// f(x) on all lanes, lane 0 back as a float (for tests that are not AVX-512 functions).
template <class F>
DNNB_AVX512 float at(F f, float x) { return _mm512_cvtss_f32(f(_mm512_set1_ps(x))); }

constexpr int64_t kPoints = 1 << 20;

TYPED_TEST(Avx512MathF32, Exp) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_exp<TypeParam::value>, [](double x) { return std::exp(x); }, -87.3f, 88.7f, kPoints);
  EXPECT_LE(s.max_ulp, 1.5) << "at x = " << s.worst_x;
}

TYPED_TEST(Avx512MathF32, Tanh) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_tanh<TypeParam::value>, [](double x) { return std::tanh(x); }, -10.0f, 10.0f, kPoints);
  EXPECT_LE(s.max_ulp, 2.0) << "at x = " << s.worst_x;
  // Past the reciprocal tier's clamp of 2|x| at 20, and far past it (e^{2|x|} is Inf there).
  Sweep far = sweep(v_tanh<TypeParam::value>, [](double x) { return std::tanh(x); }, -60.0f, 60.0f, kPoints / 16);
  EXPECT_LE(far.max_ulp, 2.0) << "at x = " << far.worst_x;
}

TYPED_TEST(Avx512MathF32, Sigmoid) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_sigmoid<TypeParam::value>, [](double x) { return 1 / (1 + std::exp(-x)); }, -87.0f, 30.0f, kPoints);
  EXPECT_LE(s.max_ulp, 3.5) << "at x = " << s.worst_x;
}

TYPED_TEST(Avx512MathF32, GeluErf) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_gelu<TypeParam::value>, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -3.0f, 3.0f, kPoints);
  EXPECT_LE(s.max_ulp, 9.0) << "at x = " << s.worst_x;
}

// Phi is one formula on both signs (erfc(z) e^{z^2} fitted in t = 1/(1 + z/2) down to z = 0):
// the negative tail keeps relative accuracy down to x = -14 (docs/avx512.md: 9.6 ulp).
TYPED_TEST(Avx512MathF32, GeluErfTails) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  Sweep s = sweep(v_gelu<TypeParam::value>, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, -14.0f, 14.0f, kPoints);
  EXPECT_LE(s.max_ulp, 14.0) << "at x = " << s.worst_x;
}

TYPED_TEST(Avx512MathF32, SpecialValues) {
  if (!usable()) GTEST_SKIP() << cpu_status().message;
  constexpr Accuracy A = TypeParam::value;
  EXPECT_TRUE(std::isnan(at(v_exp<A>, NAN)));
  EXPECT_EQ(at(v_exp<A>, -INFINITY), 0.0f);
  EXPECT_EQ(at(v_exp<A>, INFINITY), INFINITY);
  for (float x : {-INFINITY, -1e30f, -50.0f, -10.0f}) {
    EXPECT_EQ(at(v_tanh<A>, x), -1.0f) << x;
    EXPECT_EQ(at(v_tanh<A>, -x), 1.0f) << -x;
  }
  EXPECT_TRUE(std::isnan(at(v_tanh<A>, NAN)));
  EXPECT_EQ(at(v_sigmoid<A>, -INFINITY), 0.0f);
  EXPECT_EQ(at(v_sigmoid<A>, INFINITY), 1.0f);
  EXPECT_TRUE(std::isnan(at(v_sigmoid<A>, NAN)));
  EXPECT_EQ(at(v_gelu<A>, INFINITY), INFINITY);
  EXPECT_EQ(at(v_gelu<A>, 0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(at(v_gelu<A>, NAN)));
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
