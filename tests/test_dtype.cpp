// core/dtype.cpp against torch: every decode and the edge-case encodes recorded in
// suites/fixtures/casts (see docs/numerics.md), then each rule of docs/numerics.md pinned by
// name, then names, sizes and load_element/store_element for every scalar dtype, and the
// E8M0 / E2M1 scalar formats. The block formats: tests/test_block_formats.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/safetensors.h"

namespace dnnb {
namespace {

const std::string kCastsPath = std::string(DNNB_SOURCE_DIR) + "/suites/fixtures/casts/casts.safetensors";

uint32_t bits_of(float value) { return std::bit_cast<uint32_t>(value); }
float float_of(uint32_t bits) { return std::bit_cast<float>(bits); }

class CastsFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto opened = SafetensorsFile::open(kCastsPath);
    if (opened) {
      file_ = opened.value();
    } else {
      open_error_ = opened.status().to_string();
    }
  }
  static void TearDownTestSuite() { file_.reset(); }

  void SetUp() override {
    // The fixture is committed: a missing or unreadable file is a failure, not a skip.
    ASSERT_TRUE(file_) << "cannot open " << kCastsPath << ": " << open_error_
                       << " (regenerate: see docs/numerics.md)";
  }

  // The raw elements of entry `name`, which must have `dtype`; T is the element's storage.
  template <typename T>
  static std::vector<T> elements(const std::string& name, DType dtype) {
    std::vector<T> values;
    const SafetensorsEntry* entry = file_->find(name);
    EXPECT_NE(entry, nullptr) << kCastsPath << ": no tensor '" << name << "'";
    if (entry == nullptr) return values;
    EXPECT_EQ(entry->dtype, dtype) << name;
    EXPECT_EQ(sizeof(T), dtype_size(dtype)) << name;
    values.resize((entry->end - entry->begin) / sizeof(T));
    if (!values.empty()) std::memcpy(values.data(), entry->data, values.size() * sizeof(T));
    return values;
  }

  // Every encoding of a format, in order, and torch's decode of each to f32.
  template <typename Bits, typename Decode>
  void check_decode_table(const std::string& format, DType dtype, Decode decode) {
    const auto encodings = elements<Bits>(format + "_all_bits", dtype);
    const auto torch_f32 = elements<float>(format + "_all_to_f32", DType::f32);
    const size_t count = size_t{1} << (8 * sizeof(Bits));
    ASSERT_EQ(encodings.size(), count) << format;
    ASSERT_EQ(torch_f32.size(), count) << format;
    int failures = 0;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(encodings[i], static_cast<Bits>(i)) << format << ": the table must list every encoding in order";
      const float mine = decode(encodings[i]);
      const bool same = std::isnan(torch_f32[i]) ? std::isnan(mine) : bits_of(mine) == bits_of(torch_f32[i]);
      if (!same && failures++ < 10) {
        ADD_FAILURE() << format << " 0x" << std::hex << i << " decodes to 0x" << bits_of(mine)
                      << ", torch 0x" << bits_of(torch_f32[i]);
      }
    }
    EXPECT_EQ(failures, 0) << format << " decode mismatches";
  }

  // torch's encoding of every fixture input, compared bit for bit (NaN: NaN-ness only).
  template <typename Bits, typename Encode, typename IsNan>
  void check_encodes(const std::string& format, DType dtype, Encode encode, IsNan is_nan) {
    const auto inputs = elements<float>("encode_f32_inputs", DType::f32);
    const auto torch_bits = elements<Bits>("encode_to_" + format, dtype);
    ASSERT_GT(inputs.size(), 100000u) << "the fixture's input set is suspiciously small";
    ASSERT_EQ(torch_bits.size(), inputs.size()) << format;
    int failures = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Bits mine = encode(inputs[i]);
      const bool same = is_nan(torch_bits[i]) ? is_nan(mine) : mine == torch_bits[i];
      if (!same && failures++ < 10) {
        ADD_FAILURE() << "f32 0x" << std::hex << bits_of(inputs[i]) << " (" << std::defaultfloat
                      << inputs[i] << ") -> " << format << ": mine 0x" << std::hex << +mine
                      << ", torch 0x" << +torch_bits[i];
      }
    }
    EXPECT_EQ(failures, 0) << format << " encode mismatches";
  }

  static std::shared_ptr<SafetensorsFile> file_;
  static std::string open_error_;
};

std::shared_ptr<SafetensorsFile> CastsFixture::file_;
std::string CastsFixture::open_error_;

bool f16_is_nan(uint16_t bits) { return (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0; }
bool bf16_is_nan(uint16_t bits) { return (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0; }
bool e4m3fn_is_nan(uint8_t bits) { return (bits & 0x7F) == 0x7F; }
bool e5m2_is_nan(uint8_t bits) { return (bits & 0x7C) == 0x7C && (bits & 0x03) != 0; }

TEST_F(CastsFixture, MetadataNamesTheKindAndTorchVersion) {
  const auto& metadata = file_->metadata();
  ASSERT_TRUE(metadata.count("kind"));
  EXPECT_EQ(metadata.at("kind"), "casts");
  EXPECT_TRUE(metadata.count("torch_version"));
  EXPECT_TRUE(metadata.count("generator"));
}

TEST_F(CastsFixture, F16DecodeMatchesTorch) { check_decode_table<uint16_t>("f16", DType::f16, f16_to_f32); }
TEST_F(CastsFixture, Bf16DecodeMatchesTorch) { check_decode_table<uint16_t>("bf16", DType::bf16, bf16_to_f32); }
TEST_F(CastsFixture, E4m3fnDecodeMatchesTorch) {
  check_decode_table<uint8_t>("f8_e4m3fn", DType::f8_e4m3fn, f8_e4m3fn_to_f32);
}
TEST_F(CastsFixture, E5m2DecodeMatchesTorch) {
  check_decode_table<uint8_t>("f8_e5m2", DType::f8_e5m2, f8_e5m2_to_f32);
}

TEST_F(CastsFixture, F16EncodeMatchesTorch) {
  check_encodes<uint16_t>("f16", DType::f16, f32_to_f16, f16_is_nan);
}
TEST_F(CastsFixture, Bf16EncodeMatchesTorch) {
  check_encodes<uint16_t>("bf16", DType::bf16, f32_to_bf16, bf16_is_nan);
}
TEST_F(CastsFixture, E4m3fnEncodeMatchesTorch) {
  check_encodes<uint8_t>("f8_e4m3fn", DType::f8_e4m3fn, f32_to_f8_e4m3fn, e4m3fn_is_nan);
}
TEST_F(CastsFixture, E5m2EncodeMatchesTorch) {
  check_encodes<uint8_t>("f8_e5m2", DType::f8_e5m2, f32_to_f8_e5m2, e5m2_is_nan);
}

// The 8-bit formats' NaN is the same bits on every torch path: 0x7F with the input's sign.
TEST_F(CastsFixture, F8NanEncodingsMatchTorchBitForBit) {
  const auto inputs = elements<float>("encode_f32_inputs", DType::f32);
  const auto e4m3fn = elements<uint8_t>("encode_to_f8_e4m3fn", DType::f8_e4m3fn);
  const auto e5m2 = elements<uint8_t>("encode_to_f8_e5m2", DType::f8_e5m2);
  ASSERT_EQ(e4m3fn.size(), inputs.size());
  ASSERT_EQ(e5m2.size(), inputs.size());
  int nans = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!std::isnan(inputs[i])) continue;
    ++nans;
    EXPECT_EQ(f32_to_f8_e4m3fn(inputs[i]), e4m3fn[i]) << std::hex << bits_of(inputs[i]);
    EXPECT_EQ(f32_to_f8_e5m2(inputs[i]), e5m2[i]) << std::hex << bits_of(inputs[i]);
  }
  EXPECT_GE(nans, 8) << "the fixture should hold NaNs of both signs";
}

// ---- docs/numerics.md, rule by rule -------------------------------------------------------

TEST(DtypeEdges, E4m3fn464TiesTo448) {
  // 464 is the midpoint of 448 (0x7E, even) and the would-be 480 (the NaN slot 0x7F).
  EXPECT_EQ(f32_to_f8_e4m3fn(464.0f), 0x7E);
  EXPECT_EQ(f32_to_f8_e4m3fn(-464.0f), 0xFE);
  EXPECT_EQ(f32_to_f8_e4m3fn(448.0f), 0x7E);
  EXPECT_EQ(f8_e4m3fn_to_f32(0x7E), 448.0f);
}

TEST(DtypeEdges, E4m3fnOverflowAndInfSaturateTo448) {
  // torch 2.15 (the fixture's): finite overflow and Inf saturate (pytorch#178817; torch
  // versions without it give NaN). If the fixture is regenerated with a torch that differs,
  // this fails.
  for (float big : {std::nextafter(464.0f, 1e9f), 465.0f, 480.0f, 1e4f, 3e38f,
                    std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(f32_to_f8_e4m3fn(big), 0x7E) << big;
    EXPECT_EQ(f32_to_f8_e4m3fn(-big), 0xFE) << -big;
  }
}

TEST(DtypeEdges, E4m3fnNanKeepsSignAndHasNoInf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(f32_to_f8_e4m3fn(nan), 0x7F);
  EXPECT_EQ(f32_to_f8_e4m3fn(-nan), 0xFF);
  EXPECT_EQ(f32_to_f8_e4m3fn(float_of(0x7F800001)), 0x7F);  // a signalling NaN too
  EXPECT_TRUE(std::isnan(f8_e4m3fn_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(f8_e4m3fn_to_f32(0xFF)));
  // The all-ones exponent holds ordinary numbers: 0x78..0x7E are 256..448, never Inf.
  for (uint8_t bits = 0x78; bits <= 0x7E; ++bits) {
    EXPECT_EQ(f8_e4m3fn_to_f32(bits), 256.0f * (1.0f + (bits & 7) / 8.0f)) << +bits;
  }
}

TEST(DtypeEdges, E4m3fnSubnormalsAndTiesToEven) {
  EXPECT_EQ(f32_to_f8_e4m3fn(std::ldexp(1.0f, -9)), 0x01);   // smallest subnormal
  EXPECT_EQ(f32_to_f8_e4m3fn(std::ldexp(1.0f, -10)), 0x00);  // its half ties to even 0
  EXPECT_EQ(f32_to_f8_e4m3fn(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(f32_to_f8_e4m3fn(std::ldexp(3.0f, -10)), 0x02);  // 1.5 quanta ties to 2
  EXPECT_EQ(f32_to_f8_e4m3fn(std::ldexp(1.0f, -6)), 0x08);   // smallest normal
  EXPECT_EQ(f8_e4m3fn_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(f8_e4m3fn_to_f32(0x07), std::ldexp(7.0f, -9));
  EXPECT_EQ(f32_to_f8_e4m3fn(1.0625f), 0x38);  // -> 1.0
  EXPECT_EQ(f32_to_f8_e4m3fn(1.1875f), 0x3A);  // -> 1.25
}

TEST(DtypeEdges, E5m2OverflowTieGoesToInf) {
  EXPECT_EQ(f32_to_f8_e5m2(61440.0f), 0x7C);  // midpoint of 57344 (0x7B, odd) and 65536
  EXPECT_EQ(f32_to_f8_e5m2(-61440.0f), 0xFC);
  EXPECT_EQ(f32_to_f8_e5m2(61439.0f), 0x7B);
  EXPECT_EQ(f8_e5m2_to_f32(0x7B), 57344.0f);
  EXPECT_EQ(f32_to_f8_e5m2(std::numeric_limits<float>::infinity()), 0x7C);
  EXPECT_EQ(f32_to_f8_e5m2(-std::numeric_limits<float>::infinity()), 0xFC);
  EXPECT_EQ(f32_to_f8_e5m2(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(f32_to_f8_e5m2(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_TRUE(std::isinf(f8_e5m2_to_f32(0x7C)));
  EXPECT_TRUE(std::isnan(f8_e5m2_to_f32(0x7D)));
}

TEST(DtypeEdges, E5m2SubnormalsKept) {
  EXPECT_EQ(f32_to_f8_e5m2(std::ldexp(1.0f, -16)), 0x01);  // smallest subnormal
  EXPECT_EQ(f32_to_f8_e5m2(std::ldexp(1.0f, -17)), 0x00);  // tie to even 0
  EXPECT_EQ(f32_to_f8_e5m2(std::ldexp(3.0f, -17)), 0x02);
  EXPECT_EQ(f8_e5m2_to_f32(0x03), std::ldexp(3.0f, -16));
}

TEST(DtypeEdges, F16OverflowsToInf) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie above 65504 (odd) goes to Inf
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(f16_is_nan(f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7C01)));
}

TEST(DtypeEdges, F16SubnormalsKept) {
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even 0
  EXPECT_EQ(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
}

TEST(DtypeEdges, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(float_of(0x3F808000)), 0x3F80);  // tie, 0x3F80 even
  EXPECT_EQ(f32_to_bf16(float_of(0x3F818000)), 0x3F82);  // tie, 0x3F81 odd: up
  EXPECT_EQ(f32_to_bf16(float_of(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(f32_to_bf16(float_of(0x3F807FFF)), 0x3F80);  // below the tie
  EXPECT_EQ(f32_to_bf16(float_of(0x7F7F7FFF)), 0x7F7F);  // largest finite stays
  EXPECT_EQ(f32_to_bf16(float_of(0x7F7F8000)), 0x7F80);  // its tie overflows to Inf
  EXPECT_EQ(f32_to_bf16(float_of(0x00018000)), 0x0002);  // f32 subnormals round too
  EXPECT_EQ(f32_to_bf16(float_of(0x00008000)), 0x0000);
  EXPECT_EQ(bf16_to_f32(0x3F81), float_of(0x3F810000));
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(bf16_is_nan(f32_to_bf16(float_of(0x7F800001))));  // payload only in low bits
}

TEST(DtypeEdges, NegativeZeroKept) {
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f8_e4m3fn(-0.0f), 0x80);
  EXPECT_EQ(f32_to_f8_e5m2(-0.0f), 0x80);
  EXPECT_EQ(f32_to_f16(-1e-30f), 0x8000);  // underflow keeps the sign
  EXPECT_EQ(f32_to_f8_e4m3fn(-1e-30f), 0x80);
  EXPECT_TRUE(std::signbit(f16_to_f32(0x8000)));
  EXPECT_TRUE(std::signbit(bf16_to_f32(0x8000)));
  EXPECT_TRUE(std::signbit(f8_e4m3fn_to_f32(0x80)));
  EXPECT_TRUE(std::signbit(f8_e5m2_to_f32(0x80)));
  EXPECT_EQ(f8_e5m2_to_f32(0x80), 0.0f);
}

// ---- names and sizes --------------------------------------------------------------------

TEST(DtypeNames, EveryDtypeRoundTripsThroughBothNames) {
  struct Row {
    const char* name;
    const char* safetensors;  // null: the format has no dtype for it
    int64_t block_values;
    int64_t block_bytes;
  };
  // In enum order: new dtypes are appended, so the numbering of the earlier ones is fixed.
  const std::vector<Row> expected = {
      {"f32", "F32", 1, 4},  {"f16", "F16", 1, 2},         {"bf16", "BF16", 1, 2},
      {"f8_e4m3fn", "F8_E4M3", 1, 1}, {"f8_e5m2", "F8_E5M2", 1, 1}, {"i8", "I8", 1, 1},
      {"u8", "U8", 1, 1},    {"i32", "I32", 1, 4},         {"i64", "I64", 1, 8},
      {"f64", "F64", 1, 8},  {"bool", "BOOL", 1, 1},       {"f8_e8m0", "F8_E8M0", 1, 1},
      {"f4_e2m1", "F4", 1, 1}, {"q8_0", nullptr, 32, 34},  {"q4_0", nullptr, 32, 18},
      {"mxfp8", nullptr, 32, 33}, {"mxfp4", nullptr, 32, 17}, {"mxfp8_e5m2", nullptr, 32, 33}};
  ASSERT_EQ(all_dtypes().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const DType dtype = all_dtypes()[i];
    const Row& row = expected[i];
    SCOPED_TRACE(row.name);
    EXPECT_EQ(static_cast<size_t>(dtype), i);
    EXPECT_STREQ(dtype_name(dtype), row.name);
    EXPECT_EQ(parse_dtype(row.name), dtype);
    if (row.safetensors != nullptr) {
      EXPECT_STREQ(safetensors_dtype_name(dtype), row.safetensors);
      EXPECT_EQ(dtype_from_safetensors(row.safetensors), dtype);
    } else {
      EXPECT_EQ(safetensors_dtype_name(dtype), nullptr);
    }
    EXPECT_EQ(block_values(dtype), row.block_values);
    EXPECT_EQ(block_bytes(dtype), row.block_bytes);
    EXPECT_EQ(is_block_format(dtype), row.block_values > 1);
    // Two blocks: two block_bytes, except f4_e2m1's two 4-bit values, which share one byte.
    EXPECT_EQ(storage_bytes(dtype, 2 * row.block_values), dtype == DType::f4_e2m1 ? 1u : static_cast<size_t>(2 * row.block_bytes));
    // dtype_size is defined for whole-byte scalar formats only (block and f4 sizes abort).
    if (row.block_values == 1 && dtype != DType::f4_e2m1) EXPECT_EQ(dtype_size(dtype), static_cast<size_t>(row.block_bytes));
  }
  EXPECT_TRUE(is_floating(DType::f8_e5m2));
  EXPECT_TRUE(is_floating(DType::f64));
  EXPECT_TRUE(is_floating(DType::q4_0));
  EXPECT_TRUE(is_floating(DType::f8_e8m0));
  EXPECT_FALSE(is_floating(DType::i64));
  EXPECT_FALSE(is_floating(DType::boolean));
}

TEST(DtypeNames, UnknownAndMiscasedNamesAreRejected) {
  for (const char* name : {"", "F32", "float32", "bf 16", "boolean", "f8_e4m3", "Q8_0", "q8", "mxfp6",
                           "f8_e8m0fnu", "F4", "f4"})
    EXPECT_FALSE(parse_dtype(name).has_value()) << name;
  for (const char* name : {"", "f32", "F8_E4M3FN", "f8_e4m3", "Bool", "I16", "U16"})
    EXPECT_FALSE(dtype_from_safetensors(name).has_value()) << name;
}

// ---- load_element / store_element ---------------------------------------------------------

struct StoreCase {
  double stored;
  double loaded;
};

void expect_round_trips(DType dtype, const std::vector<StoreCase>& cases) {
  // A guard element on each side catches a store that writes the wrong bytes.
  const size_t size = dtype_size(dtype);
  std::vector<uint8_t> buffer((cases.size() + 2) * size, 0xA5);
  for (size_t i = 0; i < cases.size(); ++i) store_element(buffer.data() + size, dtype, static_cast<int64_t>(i), cases[i].stored);
  for (size_t i = 0; i < cases.size(); ++i) {
    const double loaded = load_element(buffer.data() + size, dtype, static_cast<int64_t>(i));
    if (std::isnan(cases[i].loaded)) {
      EXPECT_TRUE(std::isnan(loaded)) << dtype_name(dtype) << " stored " << cases[i].stored;
    } else {
      EXPECT_EQ(loaded, cases[i].loaded) << dtype_name(dtype) << " stored " << cases[i].stored;
      EXPECT_EQ(std::signbit(loaded), std::signbit(cases[i].loaded)) << dtype_name(dtype);
    }
  }
  for (size_t b = 0; b < size; ++b) {
    EXPECT_EQ(buffer[b], 0xA5) << dtype_name(dtype) << ": wrote before element 0";
    EXPECT_EQ(buffer[buffer.size() - 1 - b], 0xA5) << dtype_name(dtype) << ": wrote past the end";
  }
}

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(DtypeElements, FloatsRoundThroughF32ThenTheFormat) {
  expect_round_trips(DType::f64, {{0.1, 0.1}, {-0.0, -0.0}, {1e300, 1e300}, {kNan, kNan}});
  expect_round_trips(DType::f32, {{0.1, static_cast<float>(0.1)}, {1e300, kInf}, {-0.0, -0.0}, {kNan, kNan}});
  expect_round_trips(DType::f16, {{1.0, 1.0}, {65520.0, kInf}, {-std::ldexp(1.0, -24), -std::ldexp(1.0, -24)},
                                  {1.0 + std::ldexp(1.0, -11), 1.0}, {kNan, kNan}, {-0.0, -0.0}});
  expect_round_trips(DType::bf16, {{1.0, 1.0}, {1.0 + std::ldexp(3.0, -8), 1.0 + std::ldexp(1.0, -6)},
                                   {-1e39, -kInf}, {kNan, kNan}});
  expect_round_trips(DType::f8_e4m3fn, {{1.0625, 1.0}, {1.1875, 1.25}, {464.0, 448.0}, {1e6, 448.0},
                                        {-kInf, -448.0}, {kNan, kNan}, {-0.0, -0.0}});
  expect_round_trips(DType::f8_e5m2, {{61440.0, kInf}, {61439.0, 57344.0}, {-std::ldexp(1.0, -16), -std::ldexp(1.0, -16)},
                                      {kNan, kNan}});
}

TEST(DtypeElements, StoreRoundsTwiceLikeTorchCastingAFloat32Result) {
  // 1 + 2^-11 + 2^-40 is above the f16 tie 1 + 2^-11, so rounding it directly gives 1 + 2^-10;
  // but torch holds the value as float32 first, which drops 2^-40 and leaves the exact tie,
  // which then rounds to even: 1.0. store_element must agree with torch.
  const double value = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  uint16_t half = 0;
  store_element(&half, DType::f16, 0, value);
  EXPECT_EQ(half, 0x3C00);
  uint8_t e4m3fn = 0;
  store_element(&e4m3fn, DType::f8_e4m3fn, 0, 1.0625 + std::ldexp(1.0, -30));  // same story
  EXPECT_EQ(e4m3fn, 0x38);
}

TEST(DtypeElements, IntegersTruncateTowardZero) {
  expect_round_trips(DType::i8, {{2.7, 2}, {-2.7, -2}, {127, 127}, {-128, -128}, {-0.5, 0}});
  expect_round_trips(DType::u8, {{255.9, 255}, {0.99, 0}, {200, 200}});
  expect_round_trips(DType::i32, {{2147483647.0, 2147483647.0}, {-2147483648.9, -2147483648.0}, {-7.9, -7}});
  expect_round_trips(DType::i64, {{9007199254740992.0, 9007199254740992.0}, {-3e18, -3e18}, {1.5, 1}});
  expect_round_trips(DType::boolean, {{0.0, 0.0}, {-0.0, 0.0}, {0.25, 1.0}, {-3.0, 1.0}, {kNan, 1.0}});
}

TEST(DtypeElements, IntegerOutOfRangeFollowsTorchOnX86) {
  // C++ leaves these undefined; torch on x86 gives these (see docs/numerics.md).
  expect_round_trips(DType::i8, {{300.0, 44}, {-300.0, -44}, {1e10, 0}, {kNan, 0}});
  expect_round_trips(DType::u8, {{-1.5, 255}, {-300.0, 212}, {5000000007.0, 7}, {kNan, 0}});
  expect_round_trips(DType::i32, {{3e9, -2147483648.0}, {kInf, -2147483648.0}, {kNan, -2147483648.0}});
  expect_round_trips(DType::i64, {{1e19, -9223372036854775808.0}, {kNan, -9223372036854775808.0}});
}

TEST(DtypeElements, LoadReadsTheBitsOfEveryDtype) {
  const uint16_t f16 = 0x3555;   // 0.333251953125
  const uint16_t bf16 = 0xC0A0;  // -5
  const uint8_t e4m3fn = 0xB9, e5m2 = 0x3D, i8 = 0xFF, u8 = 0xFF, boolean = 0x02;
  const int32_t i32 = -123456;
  const int64_t i64 = int64_t{1} << 40;
  const float f32 = 0.1f;
  const double f64 = -0.1;
  EXPECT_EQ(load_element(&f16, DType::f16, 0), 0.333251953125);
  EXPECT_EQ(load_element(&bf16, DType::bf16, 0), -5.0);
  EXPECT_EQ(load_element(&e4m3fn, DType::f8_e4m3fn, 0), -1.125);
  EXPECT_EQ(load_element(&e5m2, DType::f8_e5m2, 0), 1.25);
  EXPECT_EQ(load_element(&i8, DType::i8, 0), -1.0);
  EXPECT_EQ(load_element(&u8, DType::u8, 0), 255.0);
  EXPECT_EQ(load_element(&boolean, DType::boolean, 0), 1.0);  // any nonzero byte is true
  EXPECT_EQ(load_element(&i32, DType::i32, 0), -123456.0);
  EXPECT_EQ(load_element(&i64, DType::i64, 0), 1099511627776.0);
  EXPECT_EQ(load_element(&f32, DType::f32, 0), static_cast<double>(0.1f));
  EXPECT_EQ(load_element(&f64, DType::f64, 0), -0.1);
  // `index` counts elements, not bytes.
  const int64_t pair[2] = {7, -9};
  EXPECT_EQ(load_element(pair, DType::i64, 1), -9.0);
}

// ---- E8M0 and E2M1, the MX formats' scale and FP4 element -------------------------------

TEST(DtypeE8m0, DecodesEveryCode) {
  for (int code = 0; code < 255; ++code)
    EXPECT_EQ(f8_e8m0_to_f32(static_cast<uint8_t>(code)), std::ldexp(1.0f, code - 127)) << code;
  EXPECT_EQ(bits_of(f8_e8m0_to_f32(0x00)), 0x00400000u);  // 2^-127, an f32 subnormal
  EXPECT_TRUE(std::isnan(f8_e8m0_to_f32(0xFF)));
  const uint8_t codes[3] = {0x7F, 0x80, 0xFF};
  EXPECT_EQ(load_element(codes, DType::f8_e8m0, 0), 1.0);
  EXPECT_EQ(load_element(codes, DType::f8_e8m0, 1), 2.0);
  EXPECT_TRUE(std::isnan(load_element(codes, DType::f8_e8m0, 2)));
}

TEST(DtypeE8m0, EncodesAsTorchFloat8E8m0fnu) {
  // torch 2.15's tensor.to(torch.float8_e8m0fnu) on CPU gives these codes (checked with torch
  // for each input here): the sign is dropped, a mantissa past half rounds the exponent up,
  // exactly half rounds up for a normal f32 and down for a subnormal.
  const std::vector<std::pair<float, uint8_t>> cases = {
      {1.0f, 127}, {1.5f, 128}, {1.4f, 127}, {0.75f, 127}, {3.0f, 129}, {-2.0f, 128},
      {0.0f, 0}, {-0.0f, 0}, {std::ldexp(1.0f, -127), 0}, {std::ldexp(1.0f, -128), 0},
      {float_of(0x00600000), 1}, {float_of(0x00400001), 1}, {std::ldexp(1.0f, 127), 254},
      {std::ldexp(1.5f, 126), 254}, {std::ldexp(1.5f, 127), 255}, {std::ldexp(1.4f, 126), 253}, {1e-45f, 0},
      {std::numeric_limits<float>::infinity(), 255}, {-std::numeric_limits<float>::infinity(), 255},
      {std::numeric_limits<float>::quiet_NaN(), 255}};
  for (const auto& [value, code] : cases) EXPECT_EQ(f32_to_f8_e8m0(value), code) << value;
  uint8_t stored = 0;
  store_element(&stored, DType::f8_e8m0, 0, 5.0);  // 1.25 x 2^2: rounds down to 4
  EXPECT_EQ(stored, 129);
}

TEST(DtypeE2m1, DecodesEveryCode) {
  const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int code = 0; code < 16; ++code) {
    const float value = f4_e2m1_to_f32(static_cast<uint8_t>(code));
    EXPECT_EQ(value, code < 8 ? magnitudes[code] : -magnitudes[code - 8]) << code;
    EXPECT_EQ(std::signbit(value), code >= 8) << code;  // 0x8 is -0
  }
  // Element 2k in the low nibble, 2k + 1 in the high one (OCP MX, safetensors F4).
  const uint8_t pairs[2] = {0x72, 0x9F};
  EXPECT_EQ(load_element(pairs, DType::f4_e2m1, 0), 1.0);
  EXPECT_EQ(load_element(pairs, DType::f4_e2m1, 1), 6.0);
  EXPECT_EQ(load_element(pairs, DType::f4_e2m1, 2), -6.0);
  EXPECT_EQ(load_element(pairs, DType::f4_e2m1, 3), -0.5);
}

TEST(DtypeE2m1, EncodesToNearestEvenAndSaturates) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<float, uint8_t>> cases = {
      {0.25f, 0x0}, {0.26f, 0x1}, {0.75f, 0x2}, {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4},
      {3.5f, 0x6}, {5.0f, 0x6}, {5.01f, 0x7}, {6.0f, 0x7}, {7.0f, 0x7}, {1e30f, 0x7},
      {inf, 0x7}, {-inf, 0xF}, {nan, 0x7}, {-nan, 0xF}, {-0.0f, 0x8}, {-0.3f, 0x9},
      {-1e-30f, 0x8}, {-4.0f, 0xE}};
  for (const auto& [value, code] : cases) EXPECT_EQ(f32_to_f4_e2m1(value), code) << value;
  // Stores write one nibble and keep the other.
  uint8_t pairs[2] = {0xA5, 0xA5};
  store_element(pairs, DType::f4_e2m1, 1, 3.0);
  store_element(pairs, DType::f4_e2m1, 2, -1.0);
  EXPECT_EQ(pairs[0], 0x55);
  EXPECT_EQ(pairs[1], 0xAA);
}

}  // namespace
}  // namespace dnnb
