// The encoders of core/dtype.cpp against an independent, slow oracle over f32 inputs.
//
// The oracle knows nothing of bit tricks: it decodes every encoding of the format from its
// definition in double arithmetic (exact for these formats), sorts the finite values, and
// finds the nearest one to each input by binary search, breaking an exact tie towards the
// encoding whose lowest bit is 0. Overflow, Inf and NaN follow the per-format rules of
// docs/numerics.md.
//
// DtypeExhaustive.Sampled*: 2^24 inputs (stride 257 through all 2^32 bit patterns, plus
// every tie of the format, its f32 neighbours and the specials); runs in CI, seconds.
// DtypeExhaustive.DISABLED_All*: every one of the 2^32 inputs, on demand only (minutes):
//   build/default/bin/dnnblocks_tests --gtest_also_run_disabled_tests --gtest_filter='*Exhaustive*'
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"

namespace dnnb {
namespace {

struct FormatRules {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool finite_only;          // e4m3fn: no Inf, only S.1111.111 is NaN
  bool saturate_overflow;    // e4m3fn, torch 2.15: overflow and Inf give +-max
  std::function<uint32_t(float)> encode;  // the implementation under test
};

// The format decoded from its definition: value = (-1)^s * 2^(e - bias) * (1 + m / 2^M),
// or 2^(1 - bias) * m / 2^M when e == 0; NaN and Inf for the special encodings.
double decode_by_definition(uint32_t bits, const FormatRules& rules) {
  const uint32_t mantissa_count = 1u << rules.mantissa_bits;
  const uint32_t exponent_max = (1u << rules.exponent_bits) - 1;
  const uint32_t mantissa = bits & (mantissa_count - 1);
  const uint32_t exponent = (bits >> rules.mantissa_bits) & exponent_max;
  const bool negative = (bits >> (rules.exponent_bits + rules.mantissa_bits)) & 1;
  double magnitude;
  if (rules.finite_only && exponent == exponent_max && mantissa == mantissa_count - 1) {
    magnitude = std::nan("");
  } else if (!rules.finite_only && exponent == exponent_max) {
    magnitude = mantissa == 0 ? INFINITY : std::nan("");
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - rules.bias - rules.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa_count + mantissa),
                           static_cast<int>(exponent) - rules.bias - rules.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

class SlowEncoder {
 public:
  explicit SlowEncoder(const FormatRules& rules) : rules_(rules) {
    const uint32_t sign_bit = 1u << (rules.exponent_bits + rules.mantissa_bits);
    for (uint32_t bits = 0; bits < sign_bit; ++bits) {
      const double value = decode_by_definition(bits, rules);
      if (std::isfinite(value)) finite_.push_back({value, bits});
    }
    std::sort(finite_.begin(), finite_.end(), [](const Entry& a, const Entry& b) { return a.value < b.value; });
    sign_bit_ = sign_bit;
    const Entry& top = finite_.back();
    max_finite_ = top;
    // The value the next encoding would have had if the exponent range went on: the
    // boundary of rounding is the midpoint between it and the largest finite value.
    beyond_max_ = top.value + (top.value - finite_[finite_.size() - 2].value);
    nan_bits_ = rules.finite_only ? sign_bit - 1 : ((sign_bit - 1) & ~((1u << rules.mantissa_bits) - 1)) | 1u;
    overflow_bits_ = rules.saturate_overflow ? top.bits : (sign_bit - 1) & ~((1u << rules.mantissa_bits) - 1);
  }

  bool is_nan(uint32_t bits) const { return std::isnan(decode_by_definition(bits, rules_)); }

  // The expected encoding of x; for a NaN result, any NaN encoding is acceptable.
  uint32_t encode(float x) const {
    const uint32_t sign = std::signbit(x) ? sign_bit_ : 0u;
    if (std::isnan(x)) return sign | nan_bits_;
    const double magnitude = std::fabs(static_cast<double>(x));
    if (std::isinf(x)) return sign | overflow_bits_;
    const double overflow_midpoint = (max_finite_.value + beyond_max_) / 2;
    if (magnitude > overflow_midpoint) return sign | overflow_bits_;
    if (magnitude == overflow_midpoint) {
      // Ties to even: the would-be next encoding is max_finite + 1.
      return sign | ((max_finite_.bits & 1) == 0 ? max_finite_.bits : overflow_bits_);
    }
    if (magnitude >= max_finite_.value) return sign | max_finite_.bits;
    // finite_ is sorted: the first value above the input and the one before it bracket it.
    const auto above = std::upper_bound(finite_.begin(), finite_.end(), magnitude,
                                        [](double v, const Entry& e) { return v < e.value; });
    const Entry& high = *above;
    const Entry& low = *(above - 1);
    // Comparing with the midpoint (exact in double: one bit more than the format) avoids
    // subtracting numbers far apart in magnitude.
    const double midpoint = (low.value + high.value) / 2;
    if (magnitude < midpoint) return sign | low.bits;
    if (magnitude > midpoint) return sign | high.bits;
    return sign | ((low.bits & 1) == 0 ? low.bits : high.bits);
  }

  // Every tie and its f32 neighbours, the finite values themselves, and the specials.
  std::vector<uint32_t> edge_inputs() const {
    std::vector<uint32_t> inputs;
    auto add_with_neighbours = [&inputs](double value) {
      if (value > 3.4028234663852886e38) value = INFINITY;  // bf16's would-be 2^128: use Inf
      const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(value));
      for (uint32_t b : {bits - 1, bits, bits + 1}) {
        inputs.push_back(b);
        inputs.push_back(b | 0x80000000u);
      }
    };
    for (size_t i = 0; i + 1 < finite_.size(); ++i) {
      add_with_neighbours(finite_[i].value);
      add_with_neighbours((finite_[i].value + finite_[i + 1].value) / 2);
    }
    add_with_neighbours(max_finite_.value);
    add_with_neighbours((max_finite_.value + beyond_max_) / 2);
    add_with_neighbours(beyond_max_);
    for (uint32_t special : {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu,
                             0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu}) {
      inputs.push_back(special);
      inputs.push_back(special | 0x80000000u);
    }
    return inputs;
  }

 private:
  struct Entry {
    double value;
    uint32_t bits;
  };
  FormatRules rules_;
  std::vector<Entry> finite_;  // every finite non-negative value, ascending
  Entry max_finite_{};
  double beyond_max_ = 0;
  uint32_t sign_bit_ = 0;
  uint32_t nan_bits_ = 0;
  uint32_t overflow_bits_ = 0;
};

FormatRules rules_for(DType dtype) {
  switch (dtype) {
    case DType::f16: return {"f16", 5, 10, 15, false, false, [](float x) -> uint32_t { return f32_to_f16(x); }};
    case DType::bf16: return {"bf16", 8, 7, 127, false, false, [](float x) -> uint32_t { return f32_to_bf16(x); }};
    case DType::f8_e4m3fn:
      return {"f8_e4m3fn", 4, 3, 7, true, true, [](float x) -> uint32_t { return f32_to_f8_e4m3fn(x); }};
    case DType::f8_e5m2:
      return {"f8_e5m2", 5, 2, 15, false, false, [](float x) -> uint32_t { return f32_to_f8_e5m2(x); }};
    default: break;
  }
  ADD_FAILURE() << "no encoder for " << dtype_name(dtype);
  return {"?", 0, 0, 0, false, false, nullptr};
}

// Checks f32 inputs index -> bits_of(index) for index in [0, count), split over threads;
// reports the number of mismatches and the first few.
void check_inputs(const FormatRules& rules, uint64_t count, const std::function<uint32_t(uint64_t)>& input_bits) {
  const SlowEncoder oracle(rules);
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::atomic<uint64_t> mismatches{0};
  std::mutex report_mutex;
  std::vector<std::string> reports;
  auto work = [&](unsigned part) {
    const uint64_t begin = count * part / threads;
    const uint64_t end = count * (part + 1) / threads;
    for (uint64_t i = begin; i < end; ++i) {
      const float x = std::bit_cast<float>(input_bits(i));
      const uint32_t got = rules.encode(x);
      const uint32_t want = oracle.encode(x);
      const bool ok = oracle.is_nan(want) ? oracle.is_nan(got) : got == want;
      if (!ok && mismatches.fetch_add(1) < 10) {
        std::ostringstream line;
        line << rules.name << ": f32 0x" << std::hex << std::bit_cast<uint32_t>(x) << " gives 0x" << got
             << ", the oracle 0x" << want;
        std::lock_guard<std::mutex> lock(report_mutex);
        reports.push_back(line.str());
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned part = 0; part < threads; ++part) pool.emplace_back(work, part);
  for (auto& t : pool) t.join();
  for (const auto& line : reports) ADD_FAILURE() << line;
  EXPECT_EQ(mismatches.load(), 0u) << rules.name << ": mismatches in " << count << " inputs";
}

void check_sampled(DType dtype) {
  const FormatRules rules = rules_for(dtype);
  ASSERT_TRUE(rules.encode) << dtype_name(dtype);
  // 257 is odd, so i * 257 mod 2^32 visits distinct patterns with every low-bit mix.
  constexpr uint64_t kStrided = uint64_t{1} << 24;
  check_inputs(rules, kStrided, [](uint64_t i) { return static_cast<uint32_t>(i * 257u); });
  const std::vector<uint32_t> edges = SlowEncoder(rules).edge_inputs();
  check_inputs(rules, edges.size(), [&edges](uint64_t i) { return edges[i]; });
}

void check_all(DType dtype) {
  const FormatRules rules = rules_for(dtype);
  ASSERT_TRUE(rules.encode) << dtype_name(dtype);
  check_inputs(rules, uint64_t{1} << 32, [](uint64_t i) { return static_cast<uint32_t>(i); });
}

// The oracle itself must be right on the documented edges, or agreement proves nothing.
TEST(DtypeExhaustive, OracleAgreesWithTheNamedEdges) {
  const SlowEncoder e4m3fn(rules_for(DType::f8_e4m3fn));
  EXPECT_EQ(e4m3fn.encode(464.0f), 0x7Eu);
  EXPECT_EQ(e4m3fn.encode(465.0f), 0x7Eu);
  EXPECT_EQ(e4m3fn.encode(-INFINITY), 0xFEu);
  EXPECT_EQ(e4m3fn.encode(1.0625f), 0x38u);
  EXPECT_EQ(e4m3fn.encode(1.1875f), 0x3Au);
  EXPECT_EQ(e4m3fn.encode(std::ldexp(1.0f, -10)), 0x00u);
  const SlowEncoder e5m2(rules_for(DType::f8_e5m2));
  EXPECT_EQ(e5m2.encode(61440.0f), 0x7Cu);
  EXPECT_EQ(e5m2.encode(61439.0f), 0x7Bu);
  EXPECT_TRUE(e5m2.is_nan(e5m2.encode(NAN)));
  const SlowEncoder f16(rules_for(DType::f16));
  EXPECT_EQ(f16.encode(65520.0f), 0x7C00u);
  EXPECT_EQ(f16.encode(std::ldexp(3.0f, -25)), 0x0002u);
  EXPECT_EQ(f16.encode(-0.0f), 0x8000u);
  const SlowEncoder bf16(rules_for(DType::bf16));
  EXPECT_EQ(bf16.encode(std::bit_cast<float>(0x3F818000u)), 0x3F82u);
  EXPECT_EQ(bf16.encode(std::bit_cast<float>(0x7F7F8000u)), 0x7F80u);
  EXPECT_EQ(bf16.encode(std::bit_cast<float>(0x00018000u)), 0x0002u);
}

TEST(DtypeExhaustive, SampledF16) { check_sampled(DType::f16); }
TEST(DtypeExhaustive, SampledBf16) { check_sampled(DType::bf16); }
TEST(DtypeExhaustive, SampledF8E4m3fn) { check_sampled(DType::f8_e4m3fn); }
TEST(DtypeExhaustive, SampledF8E5m2) { check_sampled(DType::f8_e5m2); }

TEST(DtypeExhaustive, DISABLED_AllF16) { check_all(DType::f16); }
TEST(DtypeExhaustive, DISABLED_AllBf16) { check_all(DType::bf16); }
TEST(DtypeExhaustive, DISABLED_AllF8E4m3fn) { check_all(DType::f8_e4m3fn); }
TEST(DtypeExhaustive, DISABLED_AllF8E5m2) { check_all(DType::f8_e5m2); }

}  // namespace
}  // namespace dnnb
