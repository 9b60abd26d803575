// safetensors reader and writer: every malformed corpus file fails with its rule, valid
// files (ours and two written by safetensors.torch.save_file) load with the right values,
// every dtype the format defines is accepted and decoded, and the writer round-trips with
// identical bytes. Corpus: tests/corpus/safetensors (remade by make_corpus.py there; checked
// against the reference reader by compare_with_reference.py). The reference reader's finer
// rules, case by case: test_safetensors_header.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/host_device.h"
#include "core/safetensors.h"

namespace dnnb {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(DNNB_SOURCE_DIR) / "tests" / "corpus" / "safetensors";

// Each malformed corpus file and the rule its error must name.
const std::map<std::string, std::string> kExpectedRule = {
    {"too_short.safetensors", "file-size"},
    {"header_too_long.safetensors", "header-length"},
    {"header_past_end.safetensors", "header-bounds"},
    {"bad_utf8.safetensors", "header-utf8"},
    {"bad_json.safetensors", "header-json"},
    {"header_not_object.safetensors", "header-object"},
    {"deep_nesting.safetensors", "header-depth"},
    {"bom_before_header.safetensors", "header-bom"},
    {"nul_padded_header.safetensors", "header-padding"},
    {"lone_surrogate.safetensors", "header-json"},
    {"number_out_of_range.safetensors", "header-json"},
    {"duplicate_metadata.safetensors", "duplicate-key"},
    {"tensor_short_array.safetensors", "tensor-entry"},
    {"dtype_map_two_keys.safetensors", "dtype"},
    {"f4_odd_count.safetensors", "sub-byte"},
    {"size_overflow_before_zero.safetensors", "size-overflow"},
    {"duplicate_name.safetensors", "duplicate-name"},
    {"duplicate_field.safetensors", "duplicate-key"},
    {"metadata_not_string.safetensors", "metadata"},
    {"metadata_not_object.safetensors", "metadata"},
    {"tensor_not_object.safetensors", "tensor-entry"},
    {"unknown_dtype.safetensors", "dtype"},
    {"lowercase_dtype.safetensors", "dtype"},
    {"negative_shape.safetensors", "shape"},
    {"float_shape.safetensors", "shape"},
    {"reversed_offsets.safetensors", "data-offsets"},
    {"offsets_wrong_length.safetensors", "data-offsets"},
    {"shape_size_mismatch.safetensors", "shape-size"},
    {"size_overflow.safetensors", "size-overflow"},
    {"size_overflow_bytes.safetensors", "size-overflow"},
    {"offset_past_end.safetensors", "data-bounds"},
    {"truncated_data.safetensors", "data-bounds"},
    {"overlap.safetensors", "overlap"},
    {"hole.safetensors", "hole"},
    {"hole_at_start.safetensors", "hole"},
    {"trailing_bytes.safetensors", "trailing-bytes"},
};

bool is_valid_file_name(const std::string& name) {
  return name.rfind("valid_", 0) == 0 || name.rfind("torch_", 0) == 0;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::shared_ptr<SafetensorsFile> open_valid(const std::string& name) {
  auto file = SafetensorsFile::open((kCorpus / name).string());
  EXPECT_TRUE(file.is_ok()) << file.status().message;
  return file.is_ok() ? *file : nullptr;
}

// Every element of a named tensor, loaded into a host tensor first.
std::vector<double> values_of(const SafetensorsFile& file, const std::string& name) {
  auto tensor = file.load(name, scratch_host());
  EXPECT_TRUE(tensor.is_ok()) << tensor.status().message;
  if (!tensor) return {};
  EXPECT_TRUE(tensor->is_contiguous());
  std::vector<double> out;
  for (int64_t i = 0; i < tensor->numel(); ++i)
    out.push_back(load_element(tensor->host_data(), tensor->dtype, i));
  return out;
}

void expect_entry(const SafetensorsFile& file, const std::string& name, DType dtype,
                  const Shape& shape) {
  const SafetensorsEntry* entry = file.find(name);
  ASSERT_NE(entry, nullptr) << name;
  ASSERT_TRUE(entry->dtype.has_value()) << name;
  EXPECT_EQ(*entry->dtype, dtype) << name;
  EXPECT_EQ(entry->file_dtype, safetensors_dtype_of(dtype)) << name;
  EXPECT_EQ(entry->shape, shape) << name;
  EXPECT_EQ(entry->numel, static_cast<uint64_t>(shape_numel(shape))) << name;
  EXPECT_EQ(entry->end - entry->begin, storage_bytes(dtype, shape_numel(shape))) << name;
}

TEST(Safetensors, CorpusHasEveryExpectedFileAndNoUnlistedOne) {
  ASSERT_TRUE(fs::is_directory(kCorpus)) << kCorpus;
  std::set<std::string> malformed_on_disk;
  for (const auto& item : fs::directory_iterator(kCorpus)) {
    const std::string name = item.path().filename().string();
    if (item.path().extension() == ".safetensors" && !is_valid_file_name(name))
      malformed_on_disk.insert(name);
  }
  for (const auto& [name, rule] : kExpectedRule)
    EXPECT_TRUE(malformed_on_disk.count(name)) << name << " missing: run make_corpus.py";
  for (const auto& name : malformed_on_disk)
    EXPECT_TRUE(kExpectedRule.count(name)) << name << " has no expected rule in this test";
}

TEST(Safetensors, EveryMalformedFileNamesItsRuleAndTheFile) {
  for (const auto& [name, rule] : kExpectedRule) {
    SCOPED_TRACE(name);
    const std::string path = (kCorpus / name).string();
    auto opened = SafetensorsFile::open(path);
    ASSERT_FALSE(opened.is_ok());
    EXPECT_EQ(opened.status().code, StatusCode::bad_input);
    const std::string& message = opened.status().message;
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("(rule: " + rule + ")"), std::string::npos) << message;

    // The in-memory path applies the same rules and names its label.
    auto from_memory = SafetensorsFile::from_bytes(read_bytes(path), "mem/" + name);
    ASSERT_FALSE(from_memory.is_ok());
    EXPECT_EQ(from_memory.status().message.rfind("mem/" + name + ": ", 0), 0u);
    EXPECT_NE(from_memory.status().message.find("(rule: " + rule + ")"), std::string::npos)
        << from_memory.status().message;
  }
}

TEST(Safetensors, MissingFileIsBadInput) {
  auto opened = SafetensorsFile::open((kCorpus / "no_such_file.safetensors").string());
  ASSERT_FALSE(opened.is_ok());
  EXPECT_EQ(opened.status().code, StatusCode::bad_input);
  EXPECT_NE(opened.status().message.find("no_such_file.safetensors"), std::string::npos);
}

TEST(Safetensors, ValidF32AndI64WithMetadata) {
  auto file = open_valid("valid_f32_i64.safetensors");
  ASSERT_TRUE(file);
  ASSERT_EQ(file->entries().size(), 2u);
  EXPECT_EQ(file->entries()[0].name, "weight");  // file (data) order
  EXPECT_EQ(file->entries()[1].name, "index");
  expect_entry(*file, "weight", DType::f32, {2, 3});
  expect_entry(*file, "index", DType::i64, {3});
  EXPECT_EQ(values_of(*file, "weight"), (std::vector<double>{0.0, 1.5, -2.0, 3.25, -0.125, 100.0}));
  EXPECT_EQ(values_of(*file, "index"), (std::vector<double>{-1, 0, 1099511627776.0}));
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("config"), R"({"hidden": 64, "names": ["a", "b"]})");
  EXPECT_FALSE(file->load("nope", scratch_host()).is_ok());
}

TEST(Safetensors, ValidLowPrecisionFormats) {
  auto file = open_valid("valid_low_precision.safetensors");
  ASSERT_TRUE(file);
  expect_entry(*file, "bf16", DType::bf16, {2, 2});
  expect_entry(*file, "e4m3", DType::f8_e4m3fn, {6});
  expect_entry(*file, "e5m2", DType::f8_e5m2, {5});
  expect_entry(*file, "f16", DType::f16, {2});
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(values_of(*file, "bf16"), (std::vector<double>{1.0, -2.5, 0.15625, inf}));
  auto e4m3 = values_of(*file, "e4m3");
  ASSERT_EQ(e4m3.size(), 6u);
  EXPECT_EQ(e4m3[0], 1.0);
  EXPECT_EQ(e4m3[1], -2.0);
  EXPECT_EQ(e4m3[2], 0.5);
  EXPECT_EQ(e4m3[3], 448.0);
  EXPECT_TRUE(std::isnan(e4m3[4]));
  EXPECT_EQ(e4m3[5], std::ldexp(1.0, -9));
  EXPECT_EQ(values_of(*file, "e5m2"),
            (std::vector<double>{1.0, -2.0, 57344.0, inf, std::ldexp(1.0, -16)}));
  EXPECT_EQ(values_of(*file, "f16"), (std::vector<double>{1.0, -2.5}));
  // The f16 tensor sits at an odd data offset: loading copies it to aligned memory.
  EXPECT_EQ(file->find("f16")->begin % 2, 1u);
}

TEST(Safetensors, ValidScalarEmptyAndIntegerTensors) {
  auto file = open_valid("valid_scalar_and_empty.safetensors");
  ASSERT_TRUE(file);
  expect_entry(*file, "scalar", DType::f32, {});
  expect_entry(*file, "empty", DType::f32, {0, 4});
  expect_entry(*file, "empty_cols", DType::i32, {3, 0});
  EXPECT_EQ(values_of(*file, "scalar"), (std::vector<double>{42.5}));
  auto empty = file->load("empty", scratch_host());
  ASSERT_TRUE(empty.is_ok()) << empty.status().message;
  EXPECT_EQ(empty->shape, (Shape{0, 4}));
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_TRUE(values_of(*file, "empty_cols").empty());
  EXPECT_EQ(values_of(*file, "flags"), (std::vector<double>{1, 0}));
  EXPECT_EQ(values_of(*file, "bytes"), (std::vector<double>{0, 127, 255}));
  EXPECT_EQ(values_of(*file, "small"), (std::vector<double>{-128, 127}));
  EXPECT_EQ(values_of(*file, "ints"), (std::vector<double>{-7, 2147483647}));
  EXPECT_EQ(values_of(*file, "double"), (std::vector<double>{0.1}));
}

TEST(Safetensors, ValidNoTensorsAndIgnoredExtraField) {
  auto none = open_valid("valid_no_tensors.safetensors");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->entries().empty());
  EXPECT_EQ(none->metadata().at("note"), "no tensors");
  auto extra = open_valid("valid_extra_field.safetensors");
  ASSERT_TRUE(extra);
  EXPECT_EQ(values_of(*extra, "a"), (std::vector<double>{1.0, 2.0}));
}

TEST(Safetensors, ReadsFileWrittenByTorchSaveFile) {
  auto file = open_valid("torch_save_file.safetensors");
  ASSERT_TRUE(file);
  ASSERT_EQ(file->entries().size(), 4u);
  expect_entry(*file, "weight", DType::f32, {2, 3});
  expect_entry(*file, "bias", DType::bf16, {3});
  expect_entry(*file, "scale", DType::f8_e4m3fn, {3});
  expect_entry(*file, "steps", DType::i64, {3});
  EXPECT_EQ(values_of(*file, "weight"), (std::vector<double>{-0.5, -0.25, 0.0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(values_of(*file, "bias"), (std::vector<double>{1.0, -2.0, 0.5}));
  EXPECT_EQ(values_of(*file, "scale"), (std::vector<double>{1.0, -2.0, 448.0}));
  EXPECT_EQ(values_of(*file, "steps"), (std::vector<double>{1, -1, 1099511627776.0}));
  EXPECT_EQ(file->metadata().at("producer"), "torch");
  EXPECT_EQ(file->metadata().at("config"), R"({"dim": 3})");
}

// The decoded values of a tensor of any file dtype (C64: real, imaginary, real, ...).
std::vector<double> decoded(const SafetensorsFile& file, const std::string& name) {
  const SafetensorsEntry* entry = file.find(name);
  EXPECT_NE(entry, nullptr) << name;
  if (entry == nullptr) return {};
  std::vector<double> out;
  const uint64_t values = entry->numel * safetensors_values_per_element(entry->file_dtype);
  for (uint64_t i = 0; i < values; ++i)
    out.push_back(decode_safetensors_value(entry->data, entry->file_dtype, i));
  return out;
}

// NaN-aware equality for decoded values.
void expect_values(const std::vector<double>& actual, const std::vector<double>& expected,
                   const std::string& name) {
  ASSERT_EQ(actual.size(), expected.size()) << name;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << name << "[" << i << "] = " << actual[i];
    else
      EXPECT_EQ(actual[i], expected[i]) << name << "[" << i << "]";
  }
}

TEST(Safetensors, EveryDtypeOfTheFormatIsAcceptedAndDecoded) {
  auto file = open_valid("valid_all_dtypes.safetensors");
  ASSERT_TRUE(file);
  ASSERT_EQ(file->entries().size(), all_safetensors_dtypes().size());
  for (size_t i = 0; i < file->entries().size(); ++i)  // one tensor per dtype, in enum order
    EXPECT_EQ(file->entries()[i].file_dtype, all_safetensors_dtypes()[i]);
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  const std::map<std::string, std::vector<double>> expected = {
      {"bool", {1, 0}},
      {"u8", {0, 255}},
      {"i8", {-128, 127}},
      {"u16", {0, 65535}},
      {"i16", {-32768, 32767}},
      {"u32", {0, 4294967295.0}},
      {"i32", {-7, 2147483647}},
      {"u64", {0, std::ldexp(1.0, 53)}},
      {"i64", {-std::ldexp(1.0, 40), std::ldexp(1.0, 40)}},
      {"f4", {0.5, 6, -0.5, -6, 1, -2, 0, -0.0}},
      {"f8_e4m3", {1, nan}},
      {"f8_e5m2", {1, inf}},
      {"f8_e8m0", {1, std::ldexp(1.0, -127), std::ldexp(1.0, 127), nan}},
      {"f8_e4m3fnuz", {1, nan, std::ldexp(1.0, -10), 240}},
      {"f8_e5m2fnuz", {1, nan, std::ldexp(1.0, -17), 57344}},
      {"f16", {1, -2.5}},
      {"bf16", {1, -2.5}},
      {"f32", {1.5, -2}},
      {"f64", {0.1}},
      {"c64", {1, -2, 0.5, 3}},
  };
  for (const auto& [name, values] : expected) expect_values(decoded(*file, name), values, name);
  EXPECT_TRUE(std::signbit(decoded(*file, "f4")[7]));  // code 8 is -0
  const SafetensorsEntry* f4 = file->find("f4");
  ASSERT_NE(f4, nullptr);
  EXPECT_EQ(f4->file_shape, (std::vector<uint64_t>{2, 4}));
  EXPECT_EQ(f4->end - f4->begin, 4u);  // 8 elements of 4 bits
  for (const char* f6 : {"f6_e2m3", "f6_e3m2"}) {
    const SafetensorsEntry* entry = file->find(f6);
    ASSERT_NE(entry, nullptr);
    EXPECT_FALSE(safetensors_decodable(entry->file_dtype));
    EXPECT_EQ(entry->end - entry->begin, 3u);  // 4 elements of 6 bits
  }

  // Dtypes the suite computes in load as tensors; the others are refused by name.
  for (const auto& entry : file->entries()) {
    SCOPED_TRACE(entry.name);
    auto tensor = file->load(entry.name, scratch_host());
    EXPECT_EQ(tensor.is_ok(), compute_dtype_of(entry.file_dtype).has_value());
    EXPECT_EQ(entry.dtype, compute_dtype_of(entry.file_dtype));
    if (!tensor.is_ok()) {
      EXPECT_EQ(tensor.status().code, StatusCode::bad_input);
      EXPECT_NE(tensor.status().message.find(std::string("has dtype ") +
                                             safetensors_name(entry.file_dtype)),
                std::string::npos)
          << tensor.status().message;
    }
  }
}

TEST(Safetensors, ReadsFileDtypesWrittenByTorch) {
  auto file = open_valid("torch_file_dtypes.safetensors");
  ASSERT_TRUE(file);
  const std::map<std::string, std::vector<double>> expected = {
      {"u16", {0, 65535}},
      {"u32", {0, 4294967295.0}},
      {"u64", {0, std::ldexp(1.0, 53)}},
      {"i16", {-32768, 32767}},
      {"c64", {1, -2, 0.5, 3}},
      {"e8m0", {1, std::ldexp(1.0, -127), std::ldexp(1.0, 127)}},
      {"e4m3fnuz", {1, 240, std::ldexp(1.0, -10)}},
      {"e5m2fnuz", {1, 57344, std::ldexp(1.0, -17)}},
      {"fp4", {0.5, 6, -0.5, -6}},  // torch's float4_e2m1fn_x2: element 2k in the low nibble
  };
  ASSERT_EQ(file->entries().size(), expected.size());
  for (const auto& [name, values] : expected) expect_values(decoded(*file, name), values, name);
  EXPECT_EQ(file->find("fp4")->file_shape, (std::vector<uint64_t>{4}));  // elements, not bytes
}

TEST(Safetensors, ValidFormsOnlySerdeReads) {
  auto file = open_valid("valid_serde_forms.safetensors");
  ASSERT_TRUE(file);
  EXPECT_TRUE(file->metadata().empty());  // "__metadata__": null
  expect_entry(*file, "array_form", DType::f16, {2});
  expect_entry(*file, "enum_form", DType::i8, {1});
  expect_entry(*file, "extras", DType::u8, {});
  EXPECT_EQ(values_of(*file, "array_form"), (std::vector<double>{1, -2}));
  EXPECT_EQ(values_of(*file, "enum_form"), (std::vector<double>{-2}));
  EXPECT_EQ(values_of(*file, "extras"), (std::vector<double>{7}));
}

TEST(Safetensors, ValidEdgeShapes) {
  auto file = open_valid("valid_edge_shapes.safetensors");
  ASSERT_TRUE(file);
  ASSERT_EQ(file->entries().size(), 6u);
  EXPECT_EQ(values_of(*file, "one"), (std::vector<double>{2.5}));
  expect_entry(*file, "empty_a", DType::f32, {0});
  EXPECT_EQ(file->find("empty_end")->numel, 0u);
  // A dimension, or a product of dimensions, beyond int64 is legal in a zero-element tensor,
  // but no compute tensor holds it (its row-major strides would overflow, whichever dim is the
  // zero: empty_d's is second): load() refuses it by name.
  for (const char* name : {"empty_b", "empty_c", "empty_d"}) {
    SCOPED_TRACE(name);
    const SafetensorsEntry* entry = file->find(name);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->numel, 0u);
    EXPECT_FALSE(entry->dtype.has_value());
    EXPECT_TRUE(entry->shape.empty());
    auto loaded = file->load(name, scratch_host());
    ASSERT_FALSE(loaded.is_ok());
    EXPECT_EQ(loaded.status().code, StatusCode::bad_input);
    EXPECT_NE(loaded.status().message.find("beyond what int64 shapes hold"), std::string::npos)
        << loaded.status().message;
  }
  EXPECT_EQ(file->find("empty_b")->file_shape, (std::vector<uint64_t>{UINT64_MAX, 0}));
  EXPECT_EQ(file->find("empty_c")->file_shape,
            (std::vector<uint64_t>{4294967296u, 4294967295u, 0}));
}

TEST(Safetensors, EveryTruncationOfAValidFileIsRefused) {
  const auto bytes = read_bytes(kCorpus / "valid_f32_i64.safetensors");
  ASSERT_FALSE(bytes.empty());
  for (size_t size = 0; size < bytes.size(); ++size) {
    auto opened = SafetensorsFile::from_bytes({bytes.begin(), bytes.begin() + size}, "cut");
    ASSERT_FALSE(opened.is_ok()) << "prefix of " << size << " bytes accepted";
    EXPECT_NE(opened.status().message.find("(rule: "), std::string::npos);
  }
}

// A tensor on the scratch host filled from `values`.
Tensor host_tensor(DType dtype, const Shape& shape, const std::vector<double>& values) {
  auto tensor = empty_tensor(scratch_host(), dtype, shape);
  EXPECT_TRUE(tensor.is_ok());
  EXPECT_EQ(static_cast<int64_t>(values.size()), tensor->numel());
  for (size_t i = 0; i < values.size(); ++i)
    store_element(tensor->host_data(), dtype, static_cast<int64_t>(i), values[i]);
  return *tensor;
}

TEST(Safetensors, WriterRoundTripsWithIdenticalBytes) {
  const Tensor matrix = host_tensor(DType::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto transposed = matrix.transpose(0, 1);  // non-contiguous: the writer gathers it
  ASSERT_TRUE(transposed.is_ok());
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"z_first", host_tensor(DType::bf16, {3}, {1.0, -2.0, 0.5})},
      {"matrix_t", *transposed},
      {"fp8", host_tensor(DType::f8_e4m3fn, {2}, {448.0, -0.5})},
      {"fp8b", host_tensor(DType::f8_e5m2, {2}, {57344.0, 1.0})},
      {"steps", host_tensor(DType::i64, {2}, {-3, 1e12})},
      {"scalar", host_tensor(DType::f32, {}, {7.5})},
      {"empty", host_tensor(DType::f16, {0, 5}, {})},
  };
  auto make_writer = [&] {
    SafetensorsWriter writer;
    for (const auto& [name, tensor] : tensors) EXPECT_TRUE(writer.add(name, tensor).is_ok());
    writer.set_metadata("config", R"({"dim": 3, "name": "x"})");
    writer.set_metadata("format", "pt");
    return writer;
  };
  const SafetensorsWriter writer = make_writer();
  auto bytes = writer.to_bytes();
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().message;

  // Header length is a multiple of 8, padded with spaces.
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes->data(), 8);  // little-endian host
  EXPECT_EQ(header_size % 8, 0u);
  const std::string header(bytes->begin() + 8, bytes->begin() + 8 + static_cast<long>(header_size));
  EXPECT_EQ(header.front(), '{');
  EXPECT_LT(header.find("\"__metadata__\""), header.find("\"empty\""));  // keys sorted
  EXPECT_LT(header.find("\"matrix_t\""), header.find("\"z_first\""));

  auto file = SafetensorsFile::from_bytes(*bytes, "written");
  ASSERT_TRUE(file.is_ok()) << file.status().message;
  ASSERT_EQ((*file)->entries().size(), tensors.size());
  EXPECT_EQ((*file)->entries()[0].name, "z_first");  // data laid out in insertion order
  EXPECT_EQ((*file)->entries()[1].name, "matrix_t");
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    expect_entry(**file, name, tensor.dtype, tensor.shape);
    auto original = to_host(tensor);
    ASSERT_TRUE(original.is_ok());
    std::vector<double> expected;
    for (int64_t i = 0; i < original->numel(); ++i)
      expected.push_back(load_element(original->host_data(), tensor.dtype, i));
    EXPECT_EQ(values_of(**file, name), expected);
  }
  EXPECT_EQ(values_of(**file, "matrix_t"), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ((*file)->metadata().at("config"), R"({"dim": 3, "name": "x"})");
  EXPECT_EQ((*file)->metadata().at("format"), "pt");

  // Deterministic: the same writer twice and a second writer give the same bytes.
  auto again = writer.to_bytes();
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *bytes);
  auto other = make_writer().to_bytes();
  ASSERT_TRUE(other.is_ok());
  EXPECT_EQ(*other, *bytes);

  // write() puts the same bytes on disk, and open() (mmap) reads them back.
  const fs::path path = fs::temp_directory_path() / "dnnb_test_safetensors_roundtrip.safetensors";
  ASSERT_TRUE(writer.write(path.string()).is_ok());
  EXPECT_EQ(read_bytes(path), *bytes);
  auto reopened = SafetensorsFile::open(path.string());
  ASSERT_TRUE(reopened.is_ok()) << reopened.status().message;
  EXPECT_EQ(values_of(**reopened, "steps"), (std::vector<double>{-3, 1e12}));
  fs::remove(path);
}

TEST(Safetensors, WriterRefusesReservedAndDuplicateNames) {
  SafetensorsWriter writer;
  const Tensor t = host_tensor(DType::f32, {1}, {1.0});
  EXPECT_TRUE(writer.add("a", t).is_ok());
  EXPECT_EQ(writer.add("a", t).code, StatusCode::bad_input);
  EXPECT_EQ(writer.add("__metadata__", t).code, StatusCode::bad_input);
  EXPECT_EQ(writer.add(std::string("bad\xff", 4), t).code, StatusCode::bad_input);
  SafetensorsWriter empty;
  auto bytes = empty.to_bytes();
  ASSERT_TRUE(bytes.is_ok());
  auto file = SafetensorsFile::from_bytes(*bytes, "empty");
  ASSERT_TRUE(file.is_ok()) << file.status().message;
  EXPECT_TRUE((*file)->entries().empty());
}

}  // namespace
}  // namespace dnnb
