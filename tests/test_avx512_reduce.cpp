// The 16-bit max of kernels/avx512/row_reduce.h (integer keys, max16_span_impl) against a
// scalar max over the same values: every length 0..300 (vector body, masked tails, the empty
// span), random f16/bf16 bit patterns with and without NaN, +-Inf, subnormals and +-0, and
// the prefetch-ahead variants (which must not change results).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/avx512/row_reduce.h"

namespace dnnb::avx512 {
namespace {

template <class Fmt>
float scalar_max(const std::vector<uint16_t>& v, size_t n) {
  float m = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    const float x = Fmt::to_float(v[i]);
    if (std::isnan(x)) return NAN;
    if (x > m || (x == 0 && m == 0 && !std::signbit(x))) m = x;  // +0 above -0, as the keys order them
  }
  return m;
}

bool same(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The inlined loops, called from a function compiled for AVX-512.
template <class Fmt, bool kAhead>
DNNB_AVX512 float max16(const std::vector<uint16_t>& v, size_t n, const Ahead& ahead) {
  return max16_span_impl<Fmt, false, kAhead>(v.data(), static_cast<int64_t>(n), NextRow{}, ahead);
}

template <class Fmt>
void check_max16(uint16_t inf_bits) {
  if (!cpu_status().is_ok()) GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(42);
  const uint16_t special[] = {0x0000, 0x8000, inf_bits, static_cast<uint16_t>(inf_bits | 0x8000), 0x0001, 0x8001,
                              0x03ff, 0x83ff, static_cast<uint16_t>(inf_bits + 1), static_cast<uint16_t>(0xffff),
                              static_cast<uint16_t>(inf_bits | 0x8001), 0x7fff};
  std::vector<uint16_t> v(300 + 64);
  for (int trial = 0; trial < 400; ++trial) {
    const int mode = trial % 5;
    for (auto& x : v) {
      uint16_t bits = static_cast<uint16_t>(rng());
      if (mode == 0) bits = special[rng() % 4];                            // zeros and infinities only
      if (mode == 1 && rng() % 8 == 0) bits = special[rng() % std::size(special)];
      if (mode == 2) bits = static_cast<uint16_t>(bits | 0x8000);          // all negative
      if (mode <= 2 && Fmt::to_float(bits) != Fmt::to_float(bits)) bits = 0x8000;  // no NaN
      if (mode == 4) bits = static_cast<uint16_t>(bits & 0x83ff);          // subnormals and zeros
      x = bits;
    }
    for (size_t n = 0; n <= 300; n += (trial < 5 ? 1 : 37)) {
      const float want = scalar_max<Fmt>(v, n);
      const Ahead ahead{256, static_cast<int64_t>(n)};
      const float got = max16<Fmt, false>(v, n, ahead), got_ahead = max16<Fmt, true>(v, n, ahead);
      ASSERT_TRUE(same(got, want)) << "n=" << n << " trial=" << trial << " got " << got << " want " << want;
      ASSERT_TRUE(same(got_ahead, want)) << "n=" << n << " trial=" << trial;
    }
  }
}

TEST(Avx512Reduce, MaxF16MatchesScalar) { check_max16<F16>(0x7c00); }
TEST(Avx512Reduce, MaxBF16MatchesScalar) { check_max16<BF16>(0x7f80); }

// The prefetch-ahead loop gives the same f32 sums, bit for bit, as the plain one.
TEST(Avx512Reduce, AheadDoesNotChangeSums) {
  if (!cpu_status().is_ok()) GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(7);
  std::normal_distribution<float> d;
  std::vector<float> x(10000);
  for (auto& e : x) e = d(rng);
  for (int64_t n : {0, 1, 63, 64, 4095, 4096, 4097, 10000}) {
    const float a = reduce_span<F32, Reduce::sum>(x.data(), n);
    const float b = reduce_span<F32, Reduce::sum>(x.data(), n, 0.0f, NextRow{}, Ahead{1024, n});
    ASSERT_TRUE(same(a, b)) << n;
  }
}

// ahead_of's limit (plain integer code: runs on any CPU). Prefetches never fault, but they
// must not touch bytes outside the tensor, so the limit ends at row r + 1's end at most.
TEST(Avx512Ahead, LimitEndsWithinTheRowOrTheNextOne) {
  std::vector<float> storage(4 * 100);
  HostRows t;
  t.data = reinterpret_cast<char*>(storage.data());
  t.element_size = sizeof(float);
  t.index.outer_dims = 1;
  t.index.size[0] = 4;
  t.index.stride[0] = 100;  // dense: each row follows the last
  t.index.rows = 4;
  t.index.cols = 100;
  EXPECT_EQ(ahead_of(t, 0, 0, 100, 1024).limit, 200);  // 256 elements ahead, cut at row 1's end
  EXPECT_EQ(ahead_of(t, 0, 0, 100, 256).limit, 164);   // 64 elements ahead
  EXPECT_EQ(ahead_of(t, 1, 0, 40, 1024).limit, 200);   // the rest of row 1 (60), then row 2 (100)
  EXPECT_EQ(ahead_of(t, 3, 0, 100, 1024).limit, 100);  // the last row: nothing beyond the tensor
  EXPECT_EQ(ahead_of(t, 3, 60, 40, 1024).limit, 40);
  EXPECT_EQ(ahead_of(t, 0, 0, 100, 0).bytes, 0);       // off
  t.index.stride[0] = 128;                             // padded rows: the padding is not read
  EXPECT_EQ(ahead_of(t, 0, 0, 100, 1024).limit, 100);
  t.index.col_stride = 2;                              // gathered: off
  EXPECT_EQ(ahead_of(t, 0, 0, 50, 1024).bytes, 0);
}

}  // namespace
}  // namespace dnnb::avx512
