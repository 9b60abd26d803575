// GGUF reader (core/gguf.h): every malformed corpus file fails with its rule, naming the file
// and the byte; the files GGUFWriter wrote hold exactly the metadata and values that gguf-py
// put in them (tests/corpus/gguf/expected.json, values decoded by gguf.quants.dequantize);
// the hand-made valid files load; load() gives row-major tensors (q8_0/q4_0 as the block
// dtypes, bytes unchanged); the ggml type table equals gguf-py's; and every truncation and
// single-byte change of a valid file is accepted or refused as bad_input, never a crash.
// Corpus: tests/corpus/gguf (make_corpus.py, suites/fixtures/gen/gguf_files.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gguf.h"
#include "core/gguf_types.h"
#include "core/host_device.h"

namespace dnnb {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(DNNB_SOURCE_DIR) / "tests" / "corpus" / "gguf";

nlohmann::json read_json(const std::string& name) {
  std::ifstream in(kCorpus / name);
  EXPECT_TRUE(in.good()) << name;
  return nlohmann::json::parse(in);
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::shared_ptr<GgufFile> open_valid(const std::string& name) {
  auto file = GgufFile::open((kCorpus / name).string());
  EXPECT_TRUE(file.is_ok()) << name << ": " << file.status().message;
  return file.is_ok() ? *file : nullptr;
}

// A value as expected.json writes it: numbers, "nan"/"inf"/"-inf", strings, booleans.
nlohmann::json value_json(const GgufFile& file, const GgufKeyValue& kv, uint64_t i) {
  switch (kv.type) {
    case GgufType::string: return file.string(kv, i);
    case GgufType::boolean: return file.as_int64(kv, i) != 0;
    case GgufType::f32:
    case GgufType::f64: {
      const double v = file.number(kv, i);
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return v;
    }
    case GgufType::i8: case GgufType::i16: case GgufType::i32: case GgufType::i64:
      return file.as_int64(kv, i);
    default: return file.as_uint64(kv, i);
  }
}

TEST(Gguf, MalformedCorpusFilesNameTheirRule) {
  const nlohmann::json rules = read_json("rules.json");
  ASSERT_GE(rules.size(), 50u);
  for (const auto& [name, rule] : rules.items()) {
    const std::string path = (kCorpus / name).string();
    auto file = GgufFile::open(path);
    ASSERT_FALSE(file.is_ok()) << name << " was accepted";
    const Status& status = file.status();
    EXPECT_EQ(status.code, StatusCode::bad_input) << name;
    EXPECT_NE(status.message.find("(rule: " + rule.get<std::string>() + ")"), std::string::npos)
        << name << ": " << status.message;
    EXPECT_EQ(status.message.rfind(path + ": at byte ", 0), 0u) << name << ": " << status.message;
  }
}

TEST(Gguf, EveryCorpusFileIsExpectedValidOrMalformed) {
  const nlohmann::json rules = read_json("rules.json");
  int valid = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".gguf") continue;
    if (name.rfind("valid_", 0) == 0) {
      ++valid;
      EXPECT_TRUE(open_valid(name) != nullptr) << name;
    } else {
      EXPECT_TRUE(rules.contains(name)) << name << " is neither valid_* nor in rules.json";
    }
  }
  EXPECT_GE(valid, 14);
}

// The files GGUFWriter wrote: header, metadata and tensors as gguf-py recorded them.
TEST(Gguf, WriterFilesMatchWhatGgufPyWrote) {
  const nlohmann::json expected = read_json("expected.json");
  ASSERT_EQ(expected.size(), 4u);
  for (const auto& [name, want] : expected.items()) {
    SCOPED_TRACE(name);
    auto file = open_valid(name);
    ASSERT_TRUE(file);
    EXPECT_EQ(file->version(), want["version"].get<uint32_t>());
    EXPECT_EQ(file->alignment(), want["alignment"].get<uint64_t>());
    ASSERT_EQ(file->metadata().size(), want["metadata"].size());
    for (size_t k = 0; k < file->metadata().size(); ++k) {
      const GgufKeyValue& kv = file->metadata()[k];
      const auto& w = want["metadata"][k];
      EXPECT_EQ(kv.key, w["key"].get<std::string>());
      const std::string type = kv.is_array ? std::string("arr[") + gguf_type_name(kv.type) + "]"
                                           : gguf_type_name(kv.type);
      EXPECT_EQ(type, w["type"].get<std::string>()) << kv.key;
      if (kv.is_array) {
        ASSERT_EQ(kv.count, w["value"].size()) << kv.key;
        for (uint64_t i = 0; i < kv.count; ++i)
          EXPECT_EQ(value_json(*file, kv, i), w["value"][i]) << kv.key << "[" << i << "]";
      } else {
        EXPECT_EQ(value_json(*file, kv, 0), w["value"]) << kv.key;
      }
    }
    ASSERT_EQ(file->tensors().size(), want["tensors"].size());
    uint64_t end = 0;
    for (size_t t = 0; t < file->tensors().size(); ++t) {
      const GgufTensorInfo& info = file->tensors()[t];
      const auto& w = want["tensors"][t];
      EXPECT_EQ(info.name, w["name"].get<std::string>());
      EXPECT_STREQ(ggml_type_info(info.type)->name, w["type"].get<std::string>().c_str()) << info.name;
      EXPECT_EQ(info.dims, w["dims"].get<std::vector<uint64_t>>()) << info.name;
      EXPECT_EQ(info.offset % file->alignment(), 0u);
      EXPECT_GE(info.offset, end);
      end = info.offset + info.bytes;
      if (!w.contains("values")) {
        EXPECT_FALSE(ggml_decodable(info.type)) << info.name;
        continue;
      }
      ASSERT_TRUE(ggml_decodable(info.type)) << info.name;
      ASSERT_EQ(info.numel, w["values"].size()) << info.name;
      for (uint64_t i = 0; i < info.numel; ++i) {
        const double v = ggml_load_value(info.data, info.type, i);
        const auto& e = w["values"][i];
        if (e.is_string()) {
          const std::string s = e.get<std::string>();
          if (s == "nan") EXPECT_TRUE(std::isnan(v)) << info.name << "[" << i << "]";
          else EXPECT_EQ(v, s == "inf" ? INFINITY : -INFINITY) << info.name << "[" << i << "]";
        } else {
          // Exact: every decoded type is exact in double, and dequantize's f32 product of an
          // f16 scale and an 8-bit q is exact too.
          EXPECT_EQ(v, e.get<double>()) << info.name << "[" << i << "]";
          if (v == 0) EXPECT_EQ(std::signbit(v), std::signbit(e.get<double>())) << info.name << "[" << i << "]";
        }
      }
    }
  }
}

TEST(Gguf, TypeTableEqualsGgufPy) {
  const nlohmann::json types = read_json("ggml_types.json");
  ASSERT_GE(types.size(), 30u);
  for (uint32_t id = 0; id < kGgmlTypeCount; ++id) {
    const GgmlTypeInfo* info = ggml_type_info(id);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->id, id);
    const std::string key = std::to_string(id);
    if (!types.contains(key)) {
      EXPECT_FALSE(ggml_type_usable(id)) << id << " " << info->name << ": gguf-py has no such type";
      continue;
    }
    const auto& t = types[key];
    EXPECT_EQ(std::string(info->name), t[0].get<std::string>()) << id;
    EXPECT_EQ(info->block_values, t[1].get<uint32_t>()) << info->name;
    EXPECT_EQ(info->block_bytes, t[2].get<uint32_t>()) << info->name;
  }
  for (const auto& [key, t] : types.items())
    EXPECT_LT(std::stoul(key), kGgmlTypeCount) << t[0] << " is missing from core/gguf_types.cpp";
  EXPECT_EQ(ggml_type_info(kGgmlTypeCount), nullptr);
}

TEST(Gguf, HandMadeValidFiles) {
  auto v2 = open_valid("valid_v2.gguf");
  ASSERT_TRUE(v2);
  EXPECT_EQ(v2->version(), 2u);
  auto empty = open_valid("valid_empty_array.gguf");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->metadata().at(0).count, 0u);
  EXPECT_EQ(empty->metadata().at(1).type, GgufType::string);
  auto boolean = open_valid("valid_bool_nonzero.gguf");
  ASSERT_TRUE(boolean);
  EXPECT_EQ(boolean->number(boolean->metadata().at(0), 0), 1.0);  // ggml: any nonzero byte
  auto zero = open_valid("valid_zero_element.gguf");
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->tensors().at(1).numel, 0u);
  EXPECT_EQ(zero->tensors().at(1).bytes, 0u);
  auto scalar = open_valid("valid_scalar_tensor.gguf");
  ASSERT_TRUE(scalar);
  auto s = scalar->load("s", scratch_host());
  ASSERT_TRUE(s.is_ok()) << s.status().message;
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(load_element(s->host_data(), DType::f32, 0), 2.5);
  for (const char* name : {"valid_trailing_bytes.gguf", "valid_unpadded_end.gguf"}) {
    auto file = open_valid(name);
    ASSERT_TRUE(file);
    EXPECT_EQ(ggml_load_value(file->tensors().at(0).data, 0, 3), 4.0) << name;
  }
}

TEST(Gguf, LoadGivesRowMajorTensorsAndBlockDtypes) {
  auto file = open_valid("valid_types.gguf");
  ASSERT_TRUE(file);
  DeviceRuntime& host = scratch_host();
  struct Want {
    const char* name;
    DType dtype;
    Shape shape;
  };
  for (const Want& want : {Want{"f32.odd", DType::f32, {3, 5}}, Want{"f16.odd", DType::f16, {2, 7}},
                           Want{"f32.3d", DType::f32, {2, 3, 4}}, Want{"bf16.small", DType::bf16, {4, 3}},
                           Want{"q8_0.w", DType::q8_0, {3, 64}}, Want{"q4_0.w", DType::q4_0, {2, 96}},
                           Want{"q4_0.3d", DType::q4_0, {2, 3, 32}}, Want{"i64.v", DType::i64, {4}}}) {
    SCOPED_TRACE(want.name);
    const GgufTensorInfo* info = file->find_tensor(want.name);
    ASSERT_NE(info, nullptr);
    auto tensor = file->load(want.name, host);
    ASSERT_TRUE(tensor.is_ok()) << tensor.status().message;
    EXPECT_EQ(tensor->dtype, want.dtype);
    EXPECT_EQ(tensor->shape, want.shape);
    ASSERT_EQ(storage_bytes(tensor->dtype, tensor->numel()), info->bytes);
    EXPECT_EQ(std::memcmp(tensor->host_data(), info->data, info->bytes), 0);
    // Element (r, c) of the row-major tensor is GGUF element r * dims[0] + c.
    for (int64_t i = 0; i < tensor->numel(); ++i)
      if (!std::isnan(load_element(tensor->host_data(), want.dtype, i)))
        EXPECT_EQ(load_element(tensor->host_data(), want.dtype, i),
                  ggml_load_value(info->data, info->type, static_cast<uint64_t>(i)));
  }
  auto q4k = file->load("q4_K.w", host);
  ASSERT_FALSE(q4k.is_ok());
  EXPECT_EQ(q4k.status().code, StatusCode::bad_input);
  EXPECT_NE(q4k.status().message.find("q4_K"), std::string::npos) << q4k.status().message;
  auto missing = file->load("no.such", host);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message.find("no tensor named \"no.such\""), std::string::npos);
  auto zero = open_valid("valid_zero_element.gguf");
  ASSERT_TRUE(zero);
  auto z = zero->load("z", host);
  ASSERT_TRUE(z.is_ok()) << z.status().message;
  EXPECT_EQ(z->shape, (Shape{0, 32}));
  auto zz = zero->load("zz", host);  // dims [0, 2^62, 2^62]: products past int64
  ASSERT_FALSE(zz.is_ok());
  EXPECT_EQ(zz.status().code, StatusCode::bad_input);
}

// Every prefix and every single-byte change of a valid file: accepted, or refused as
// bad_input naming a rule; never a crash or an out-of-bounds read (run under ASan in the
// asan preset; the fuzz target goes further).
TEST(Gguf, TruncationsAndByteFlipsAreRefusedCleanly) {
  for (const char* name : {"valid_metadata.gguf", "valid_types.gguf", "valid_align64.gguf"}) {
    const std::vector<uint8_t> bytes = read_bytes(kCorpus / name);
    ASSERT_GT(bytes.size(), 100u);
    auto whole = GgufFile::open((kCorpus / name).string());
    ASSERT_TRUE(whole.is_ok());
    const uint64_t end_of_infos = whole.value()->data_offset();
    for (size_t n = 0; n < end_of_infos; ++n) {
      auto file = GgufFile::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n), name);
      ASSERT_FALSE(file.is_ok()) << name << " cut at " << n;
      ASSERT_EQ(file.status().code, StatusCode::bad_input);
      ASSERT_NE(file.status().message.find("(rule: "), std::string::npos) << file.status().message;
    }
    for (size_t at = 0; at < end_of_infos; ++at)
      for (uint8_t flip : {0x01, 0x80, 0xFF}) {
        std::vector<uint8_t> changed = bytes;
        changed[at] ^= flip;
        auto file = GgufFile::from_bytes(std::move(changed), name);
        if (!file.is_ok()) {
          ASSERT_EQ(file.status().code, StatusCode::bad_input) << name << " byte " << at;
          continue;
        }
        for (const auto& info : file.value()->tensors()) {
          ASSERT_LE(info.offset + info.bytes + file.value()->data_offset(), bytes.size());
          if (ggml_decodable(info.type))
            for (uint64_t i = 0; i < info.numel; ++i) (void)ggml_load_value(info.data, info.type, i);
        }
      }
  }
}

}  // namespace
}  // namespace dnnb
