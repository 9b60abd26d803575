// The safetensors reader against the format's reference reader (the Rust `safetensors`
// crate, which reads its header through serde_json), rule by rule: each header below is
// accepted or refused exactly as the reference does (checked with its Python package, see
// tests/corpus/safetensors/compare_with_reference.py), except duplicate names and metadata
// keys, which the reference resolves by keeping the last one and this reader refuses. Also
// the file dtypes: names, bit widths, compute dtypes and decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/safetensors.h"
#include "core/safetensors_dtype.h"

namespace dnnb {
namespace {

using namespace std::string_literals;

// The fields of a valid F32 tensor of one element (4 data bytes).
#define ONE_F32 "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"

// {"a":{FIELDS}}
std::string tensor_a(const std::string& fields) { return "{\"a\":{" + fields + "}}"; }

// Tensor "a" of ONE_F32 with a field "x" holding `value`, which the reader checks and ignores.
std::string with_ignored(const std::string& value) {
  return tensor_a(ONE_F32 ",\"x\":" + value);
}

// `levels` copies of `open`, then `inner`, then `levels` copies of `close`.
std::string nested(const std::string& open, const std::string& close, int levels,
                   const std::string& inner = "") {
  std::string out;
  for (int i = 0; i < levels; ++i) out += open;
  out += inner;
  for (int i = 0; i < levels; ++i) out += close;
  return out;
}

struct HeaderCase {
  const char* what;
  std::string header;  // the header bytes exactly (no padding added)
  size_t data_bytes;   // zero bytes of data after the header
  const char* rule;    // the rule a refusal names; nullptr when the file is accepted
};

std::vector<uint8_t> file_with(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> bytes(8 + header.size() + data_bytes, 0);
  const uint64_t size = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(size >> (8 * i));
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  return bytes;
}

TEST(SafetensorsHeader, AcceptsAndRefusesAsTheReferenceReader) {
  const std::vector<HeaderCase> cases = {
      {"plain", tensor_a(ONE_F32), 4, nullptr},
      {"JSON whitespace before and after", " \x09\x0d\x0a{\"a\":{" ONE_F32 "}} \x09\x0d\x0a", 4, nullptr},
      {"whitespace inside", "{ \"a\" : { \"dtype\" : \"F32\" , \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 4 ] } }", 4, nullptr},
      {"form feed before", "\x0c{\"a\":{" ONE_F32 "}}", 4, "header-json"},
      {"form feed after", "{\"a\":{" ONE_F32 "}}\x0c", 4, "header-padding"},
      {"vertical tab after", "{\"a\":{" ONE_F32 "}}\x0b", 4, "header-padding"},
      {"no-break space after", "{\"a\":{" ONE_F32 "}}\xc2\xa0", 4, "header-padding"},
      {"NUL after", "{\"a\":{" ONE_F32 "}}\0"s, 4, "header-padding"},
      {"NUL before", "\0{\"a\":{" ONE_F32 "}}"s, 4, "header-json"},
      {"byte-order mark", "\xef\xbb\xbf{\"a\":{" ONE_F32 "}}", 4, "header-bom"},
      {"space then byte-order mark", " \xef\xbb\xbf{\"a\":{" ONE_F32 "}}", 4, "header-json"},
      {"second closing brace", tensor_a(ONE_F32 "}"), 4, "header-padding"},
      {"two objects", "{} {}", 0, "header-padding"},
      {"comment after", "{\"a\":{" ONE_F32 "}} // c", 4, "header-padding"},
      {"empty header", "", 0, "header-json"},
      {"only spaces", "        ", 0, "header-json"},
      {"array", "[]", 0, "header-object"},
      {"string", "\"x\"", 0, "header-object"},
      {"number", "5", 0, "header-object"},
      {"null", "null", 0, "header-object"},
      {"bare word", "x", 0, "header-json"},
      {"trailing comma", "{\"a\":{" ONE_F32 "},}", 4, "header-json"},
      {"unterminated", "{\"a\":{" ONE_F32 "}", 4, "header-json"},
      {"trailing comma in shape", tensor_a("\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]"), 4, "header-json"},
      {"unquoted key", "{a:1}", 0, "header-json"},
      {"single quotes", "{'a':1}", 0, "header-json"},
      {"missing colon", "{\"a\" {" ONE_F32 "}}", 4, "header-json"},
      {"empty object", "{}", 0, nullptr},
      {"empty object, a data byte", "{}", 1, "trailing-bytes"},
      {"escaped name", "{\"\\u0061\":{" ONE_F32 "}}", 4, nullptr},
      {"escaped field name and dtype", tensor_a("\"\\u0064type\":\"F\\u00332\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, nullptr},
      {"escaped __metadata__", "{\"\\u005f_metadata__\":{\"k\":\"v\"}}", 0, nullptr},
      {"surrogate pair", "{\"a\\ud83d\\ude00\":{" ONE_F32 "}}", 4, nullptr},
      {"lone leading surrogate", "{\"a\\ud800\":{" ONE_F32 "}}", 4, "header-json"},
      {"lone trailing surrogate", "{\"a\\udc00\":{" ONE_F32 "}}", 4, "header-json"},
      {"leading surrogate then BMP escape", "{\"a\\ud800\\u0041\":{" ONE_F32 "}}", 4, "header-json"},
      {"unknown escape", "{\"a\\q\":{" ONE_F32 "}}", 4, "header-json"},
      {"short \\u escape", "{\"a\\u12\":{" ONE_F32 "}}", 4, "header-json"},
      {"raw control byte", "{\"a\x01\":{" ONE_F32 "}}", 4, "header-json"},
      {"raw tab in a string", "{\"a\x09\":{" ONE_F32 "}}", 4, "header-json"},
      {"raw DEL", "{\"a\x7f\":{" ONE_F32 "}}", 4, nullptr},
      {"escaped slash", "{\"a\\/b\":{" ONE_F32 "}}", 4, nullptr},
      {"empty name", "{\"\":{" ONE_F32 "}}", 4, nullptr},
      {"1e308", with_ignored("1e308"), 4, nullptr},
      {"1e309", with_ignored("1e309"), 4, "header-json"},
      {"-1e400", with_ignored("-1e400"), 4, "header-json"},
      {"1e-400", with_ignored("1e-400"), 4, nullptr},
      {"0e999999999999", with_ignored("0e999999999999"), 4, nullptr},
      {"1e999999999999", with_ignored("1e999999999999"), 4, "header-json"},
      {"1e-999999999999", with_ignored("1e-999999999999"), 4, nullptr},
      {"1.7976931348623157e308", with_ignored("1.7976931348623157e308"), 4, nullptr},
      {"1.7976931348623158e308 (serde_json's product overflows)", with_ignored("1.7976931348623158e308"), 4, "header-json"},
      {"400 nines", with_ignored(std::string(400, '9')), 4, "header-json"},
      {"10^308 written out", with_ignored("1" + std::string(308, '0')), 4, nullptr},
      {"10^309 written out", with_ignored("1" + std::string(309, '0')), 4, "header-json"},
      {"tiny decimal scaled up", with_ignored("0." + std::string(29, '0') + "1e330"), 4, nullptr},
      {"40 fraction digits", with_ignored("0." + std::string(40, '1')), 4, nullptr},
      {"leading zero", with_ignored("01"), 4, "header-json"},
      {"no digit after point", with_ignored("1."), 4, "header-json"},
      {"no digit before point", with_ignored(".5"), 4, "header-json"},
      {"lone minus", with_ignored("-"), 4, "header-json"},
      {"no exponent digit", with_ignored("1e"), 4, "header-json"},
      {"no exponent digit after sign", with_ignored("1e+"), 4, "header-json"},
      {"plus sign", with_ignored("+1"), 4, "header-json"},
      {"-0", with_ignored("-0"), 4, nullptr},
      {"1E+2", with_ignored("1E+2"), 4, nullptr},
      {"NaN", with_ignored("NaN"), 4, "header-json"},
      {"Infinity", with_ignored("Infinity"), 4, "header-json"},
      {"true", with_ignored("true"), 4, nullptr},
      {"misspelt null", with_ignored("nul"), 4, "header-json"},
      {"127 levels", with_ignored(nested("[", "]", 125)), 4, nullptr},
      {"128 levels", with_ignored(nested("[", "]", 126)), 4, "header-depth"},
      {"128 levels of objects", with_ignored(nested("{\"k\":", "}", 126, "1")), 4, "header-depth"},
      {"nested ignored values", with_ignored("{\"y\":[1,{\"z\":null}],\"y\":\"again\"}"), 4, nullptr},
      {"array form", "{\"a\":[\"F32\",[1],[0,4]]}", 4, nullptr},
      {"array form of 2", "{\"a\":[\"F32\",[1]]}", 4, "tensor-entry"},
      {"array form of 4", "{\"a\":[\"F32\",[1],[0,4],0]}", 4, "tensor-entry"},
      {"empty array", "{\"a\":[]}", 0, "tensor-entry"},
      {"tensor is a number", "{\"a\":5}", 0, "tensor-entry"},
      {"tensor is null", "{\"a\":null}", 0, "tensor-entry"},
      {"tensor is a string", "{\"a\":\"F32\"}", 0, "tensor-entry"},
      {"dtype as {NAME: null}", "{\"a\":{\"dtype\":{\"F32\":null},\"shape\":[1],\"data_offsets\":[0,4]}}", 4, nullptr},
      {"dtype as {NAME: {}}", "{\"a\":{\"dtype\":{\"F32\":{}},\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
      {"dtype as {}", "{\"a\":{\"dtype\":{},\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
      {"dtype map of two keys", "{\"a\":{\"dtype\":{\"F32\":null,\"F16\":null},\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
      {"dtype map, unknown name", "{\"a\":{\"dtype\":{\"F12\":null},\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype"},
      {"dtype is a number", tensor_a("\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]"), 4, "dtype"},
      {"dtype is null", tensor_a("\"dtype\":null,\"shape\":[1],\"data_offsets\":[0,4]"), 4, "dtype"},
      {"lowercase dtype", tensor_a("\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, "dtype"},
      {"torch's dtype name", tensor_a("\"dtype\":\"F8_E4M3FN\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, "dtype"},
      {"no dtype", tensor_a("\"shape\":[1],\"data_offsets\":[0,4]"), 4, "dtype"},
      {"no shape", tensor_a("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4, "shape"},
      {"no data_offsets", tensor_a("\"dtype\":\"F32\",\"shape\":[1]"), 4, "data-offsets"},
      {"dtype twice", tensor_a("\"dtype\":\"F32\"," ONE_F32), 4, "duplicate-key"},
      {"shape twice", tensor_a("\"shape\":[1]," ONE_F32), 4, "duplicate-key"},
      {"data_offsets twice", tensor_a("\"data_offsets\":[0,4]," ONE_F32), 4, "duplicate-key"},
      {"unknown field twice", tensor_a("\"x\":1,\"x\":2," ONE_F32), 4, nullptr},
      {"shape -1", tensor_a("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4, "shape"},
      {"shape -0", tensor_a("\"dtype\":\"F32\",\"shape\":[-0],\"data_offsets\":[0,0]"), 0, "shape"},
      {"shape 1.0", tensor_a("\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]"), 4, "shape"},
      {"shape 1e0", tensor_a("\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]"), 4, "shape"},
      {"shape \"1\"", tensor_a("\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]"), 4, "shape"},
      {"shape null", tensor_a("\"dtype\":\"F32\",\"shape\":[null],\"data_offsets\":[0,4]"), 4, "shape"},
      {"shape not an array", tensor_a("\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]"), 4, "shape"},
      {"shape an object", "{\"a\":{\"dtype\":\"F32\",\"shape\":{},\"data_offsets\":[0,4]}}", 4, "shape"},
      {"dimension 2^64", tensor_a("\"dtype\":\"F32\",\"shape\":[18446744073709551616,0],\"data_offsets\":[0,0]"), 0, "shape"},
      {"dimension 2^64-1 then 0", tensor_a("\"dtype\":\"F32\",\"shape\":[18446744073709551615,0],\"data_offsets\":[0,0]"), 0, nullptr},
      {"0 then dimension 2^64-1", tensor_a("\"dtype\":\"F32\",\"shape\":[0,18446744073709551615],\"data_offsets\":[0,0]"), 0, nullptr},
      {"product overflows before a 0", tensor_a("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]"), 0, "size-overflow"},
      {"0 first: no overflow", tensor_a("\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],\"data_offsets\":[0,0]"), 0, nullptr},
      {"bits overflow", tensor_a("\"dtype\":\"F64\",\"shape\":[2305843009213693952],\"data_offsets\":[0,0]"), 0, "size-overflow"},
      {"scalar", tensor_a("\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]"), 4, nullptr},
      {"one offset", tensor_a("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]"), 4, "data-offsets"},
      {"three offsets", tensor_a("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]"), 4, "data-offsets"},
      {"offsets reversed", tensor_a("\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]"), 4, "data-offsets"},
      {"negative offset", tensor_a("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,-4]"), 4, "data-offsets"},
      {"float offset", tensor_a("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]"), 4, "data-offsets"},
      {"offsets a string", tensor_a("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0,4\""), 4, "data-offsets"},
      {"F4 of 2", tensor_a("\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]"), 1, nullptr},
      {"F4 of 3", tensor_a("\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]"), 2, "sub-byte"},
      {"F4 scalar", tensor_a("\"dtype\":\"F4\",\"shape\":[],\"data_offsets\":[0,1]"), 1, "sub-byte"},
      {"F4 of 2x3", tensor_a("\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[0,3]"), 3, nullptr},
      {"F4 of 2, 2 bytes", tensor_a("\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,2]"), 2, "shape-size"},
      {"F6_E2M3 of 4", tensor_a("\"dtype\":\"F6_E2M3\",\"shape\":[4],\"data_offsets\":[0,3]"), 3, nullptr},
      {"F6_E3M2 of 2", tensor_a("\"dtype\":\"F6_E3M2\",\"shape\":[2],\"data_offsets\":[0,2]"), 2, "sub-byte"},
      {"F6_E3M2 of 8", tensor_a("\"dtype\":\"F6_E3M2\",\"shape\":[8],\"data_offsets\":[0,6]"), 6, nullptr},
      {"F6 of 0", tensor_a("\"dtype\":\"F6_E2M3\",\"shape\":[0],\"data_offsets\":[0,0]"), 0, nullptr},
      {"C64 of 1", tensor_a("\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]"), 8, nullptr},
      {"F8_E8M0 of 1", tensor_a("\"dtype\":\"F8_E8M0\",\"shape\":[1],\"data_offsets\":[0,1]"), 1, nullptr},
      {"F8_E4M3FNUZ of 1", tensor_a("\"dtype\":\"F8_E4M3FNUZ\",\"shape\":[1],\"data_offsets\":[0,1]"), 1, nullptr},
      {"zero-byte tensors share an offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},\"b\":{\"dtype\":\"I8\",\"shape\":[0],\"data_offsets\":[0,0]},\"c\":{" ONE_F32 "}}", 4, nullptr},
      {"zero-byte tensor inside another", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[2,2]},\"b\":{" ONE_F32 "}}", 4, "overlap"},
      {"zero-byte tensor past the end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},\"b\":{" ONE_F32 "}}", 4, "data-bounds"},
      {"metadata null", "{\"__metadata__\":null}", 0, nullptr},
      {"metadata empty", "{\"__metadata__\":{}}", 0, nullptr},
      {"metadata twice", "{\"__metadata__\":null,\"__metadata__\":{}}", 0, "duplicate-key"},
      {"metadata number value", "{\"__metadata__\":{\"k\":1}}", 0, "metadata"},
      {"metadata null value", "{\"__metadata__\":{\"k\":null}}", 0, "metadata"},
      {"metadata array value", "{\"__metadata__\":{\"k\":[\"v\"]}}", 0, "metadata"},
      {"metadata a string", "{\"__metadata__\":\"x\"}", 0, "metadata"},
      {"metadata an array", "{\"__metadata__\":[]}", 0, "metadata"},
      {"metadata key twice", "{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}", 0, "duplicate-key"},
      {"name twice", "{\"a\":{" ONE_F32 "},\"a\":{" ONE_F32 "}}", 4, "duplicate-name"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto file = SafetensorsFile::from_bytes(file_with(c.header, c.data_bytes), "case");
    if (c.rule == nullptr) {
      EXPECT_TRUE(file.is_ok()) << file.status().message;
      continue;
    }
    ASSERT_FALSE(file.is_ok()) << "accepted";
    EXPECT_EQ(file.status().code, StatusCode::bad_input);
    EXPECT_EQ(file.status().message.rfind("case: ", 0), 0u) << file.status().message;
    EXPECT_NE(file.status().message.find("(rule: " + std::string(c.rule) + ")"), std::string::npos)
        << file.status().message;
  }
}

TEST(SafetensorsHeader, DecodesNamesEscapesAndMetadata) {
  const std::string header =
      "{\"__metadata__\":{\"k\":\"caf\\u00e9 \\ud83d\\ude00\\n\"},"
      "\"a\\/b\\u0000\":{" ONE_F32 "}}";
  auto file = SafetensorsFile::from_bytes(file_with(header, 4), "escapes");
  ASSERT_TRUE(file.is_ok()) << file.status().message;
  EXPECT_EQ((*file)->metadata().at("k"), "caf\xc3\xa9 \xf0\x9f\x98\x80\n");
  ASSERT_EQ((*file)->entries().size(), 1u);
  EXPECT_EQ((*file)->entries()[0].name, "a/b\0"s);
}

TEST(SafetensorsHeader, ErrorsNameWhatIsWrong) {
  auto bom = SafetensorsFile::from_bytes(file_with("\xef\xbb\xbf{}", 0), "bom.safetensors");
  ASSERT_FALSE(bom.is_ok());
  EXPECT_NE(bom.status().message.find("byte-order mark"), std::string::npos) << bom.status().message;
  auto nul = SafetensorsFile::from_bytes(file_with("{}\0\0\0\0\0\0"s, 0), "nul.safetensors");
  ASSERT_FALSE(nul.is_ok());
  EXPECT_NE(nul.status().message.find("NUL byte at header byte 2"), std::string::npos)
      << nul.status().message;
  auto dtype = SafetensorsFile::from_bytes(file_with(tensor_a("\"dtype\":\"F12\""), 0), "d");
  ASSERT_FALSE(dtype.is_ok());
  EXPECT_NE(dtype.status().message.find("F8_E8M0"), std::string::npos)  // lists the valid names
      << dtype.status().message;
}

TEST(SafetensorsDType, NamesBitsAndComputeDtypes) {
  const auto& all = all_safetensors_dtypes();
  ASSERT_EQ(all.size(), 22u);
  for (SafetensorsDType dtype : all) {
    const std::string name = safetensors_name(dtype);
    EXPECT_EQ(parse_safetensors_name(name), dtype) << name;
    // A compute dtype exactly where core/dtype.h knows the name, and it maps back.
    EXPECT_EQ(compute_dtype_of(dtype), dtype_from_safetensors(name)) << name;
    if (auto compute = compute_dtype_of(dtype)) {
      EXPECT_EQ(safetensors_dtype_of(*compute), dtype) << name;
      EXPECT_EQ(static_cast<int64_t>(safetensors_bits(dtype)), block_bits(*compute)) << name;
    }
  }
  EXPECT_FALSE(parse_safetensors_name("f32").has_value());
  EXPECT_FALSE(parse_safetensors_name("F8_E4M3FN").has_value());
  EXPECT_EQ(safetensors_bits(SafetensorsDType::f4), 4u);
  EXPECT_EQ(safetensors_bits(SafetensorsDType::f6_e2m3), 6u);
  EXPECT_EQ(safetensors_bits(SafetensorsDType::f6_e3m2), 6u);
  EXPECT_EQ(safetensors_bits(SafetensorsDType::f8_e8m0), 8u);
  EXPECT_EQ(safetensors_bits(SafetensorsDType::u16), 16u);
  EXPECT_EQ(safetensors_bits(SafetensorsDType::c64), 64u);
  // Every scalar dtype is a file dtype that maps back; the block formats have none.
  for (DType dtype : all_dtypes()) {
    const auto file_dtype = safetensors_dtype_of(dtype);
    EXPECT_EQ(file_dtype.has_value(), !is_block_format(dtype)) << dtype_name(dtype);
    if (file_dtype) EXPECT_EQ(compute_dtype_of(*file_dtype), dtype) << dtype_name(dtype);
  }
}

double decode_byte(SafetensorsDType dtype, uint8_t code) {
  return decode_safetensors_value(&code, dtype, 0);
}

TEST(SafetensorsDType, DecodesSubByteAndEightBitFormats) {
  // E2M1: the 8 magnitudes, then the same negated.
  const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint8_t code = 0; code < 16; ++code) {
    const uint8_t pair = static_cast<uint8_t>(code | (code << 4));
    const double expected = code & 8 ? -e2m1[code & 7] : e2m1[code & 7];
    EXPECT_EQ(decode_safetensors_value(&pair, SafetensorsDType::f4, 0), expected) << int(code);
    EXPECT_EQ(decode_safetensors_value(&pair, SafetensorsDType::f4, 1), expected) << int(code);
  }
  const uint8_t pair = 0x71;  // element 0 in the low nibble: 0.5, then 6
  EXPECT_EQ(decode_safetensors_value(&pair, SafetensorsDType::f4, 0), 0.5);
  EXPECT_EQ(decode_safetensors_value(&pair, SafetensorsDType::f4, 1), 6.0);

  // E8M0: 2^(code - 127), 0xFF NaN.
  for (int code = 0; code < 255; ++code)
    EXPECT_EQ(decode_byte(SafetensorsDType::f8_e8m0, static_cast<uint8_t>(code)),
              std::ldexp(1.0, code - 127));
  EXPECT_TRUE(std::isnan(decode_byte(SafetensorsDType::f8_e8m0, 0xFF)));

  // FNUZ: 0x80 is the one NaN; no infinity; bias 8 (E4M3) and 16 (E5M2).
  EXPECT_TRUE(std::isnan(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0x80)));
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0x00), 0.0);
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0x07), 7 * std::ldexp(1.0, -10));
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0x08), std::ldexp(1.0, -7));
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0x40), 1.0);
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0x7F), 240.0);
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e4m3fnuz, 0xFF), -240.0);
  EXPECT_TRUE(std::isnan(decode_byte(SafetensorsDType::f8_e5m2fnuz, 0x80)));
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e5m2fnuz, 0x03), 3 * std::ldexp(1.0, -17));
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e5m2fnuz, 0x04), std::ldexp(1.0, -15));
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e5m2fnuz, 0x40), 1.0);
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e5m2fnuz, 0x7F), 57344.0);
  EXPECT_EQ(decode_byte(SafetensorsDType::f8_e5m2fnuz, 0xFF), -57344.0);

  // Formats the suite computes in decode as load_element does.
  for (int code = 0; code < 256; ++code) {
    const uint8_t byte = static_cast<uint8_t>(code);
    const double fn = decode_byte(SafetensorsDType::f8_e4m3, byte);
    const double ref = load_element(&byte, DType::f8_e4m3fn, 0);
    EXPECT_TRUE(fn == ref || (std::isnan(fn) && std::isnan(ref))) << code;
  }
  EXPECT_FALSE(safetensors_decodable(SafetensorsDType::f6_e2m3));
  EXPECT_FALSE(safetensors_decodable(SafetensorsDType::f6_e3m2));
  EXPECT_EQ(safetensors_values_per_element(SafetensorsDType::c64), 2u);
}

#undef ONE_F32

}  // namespace
}  // namespace dnnb
