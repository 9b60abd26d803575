// The observer's LayerNorm capture (suites/fixtures/observed/layernorm.safetensors, written
// by suites/fixtures/observer.py from torch.nn.LayerNorm(64) with random weight and bias)
// read through SafetensorsFile and recomputed here in plain double: the captured output must
// be torch's f32 LayerNorm of the captured input, weight, bias and eps. Also: every op
// fixture in the manifest (suites/fixtures/gen/family1.py) round-trips its problem string
// through Problem::parse, lies where its name says, and matches its sha256.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fixtures.h"
#include "core/registry.h"
#include "core/host_device.h"
#include "core/safetensors.h"

namespace dnnb {
namespace {

const std::string kLayerNormCapture = std::string(DNNB_SOURCE_DIR) + "/suites/fixtures/observed/layernorm.safetensors";

std::vector<double> load_f32(const SafetensorsFile& file, const std::string& name, Shape* shape) {
  auto tensor = file.load(name, scratch_host());
  EXPECT_TRUE(tensor.is_ok()) << tensor.status().message;
  if (!tensor.is_ok()) return {};
  EXPECT_EQ(tensor->dtype, DType::f32) << name;
  if (shape) *shape = tensor->shape;
  std::vector<double> values(static_cast<size_t>(tensor->numel()));
  const void* base = tensor->host_data();
  for (int64_t i = 0; i < tensor->numel(); ++i) values[static_cast<size_t>(i)] = load_element(base, tensor->dtype, i);
  return values;
}

TEST(ObserverFixture, LayerNormCaptureMatchesDoubleRecompute) {
  auto opened = SafetensorsFile::open(kLayerNormCapture);
  ASSERT_TRUE(opened.is_ok()) << opened.status().message
                              << " (regenerate with python3 suites/fixtures/generate.py --only observed)";
  const SafetensorsFile& file = **opened;

  const auto& md = file.metadata();
  ASSERT_TRUE(md.count("module") && md.count("config") && md.count("torch_version"));
  EXPECT_EQ(md.at("module"), "LayerNorm");
  const auto config = nlohmann::json::parse(md.at("config"));
  const auto& attributes = config.at("attributes");
  const double eps = attributes.at("eps").get<double>();
  const int64_t n = attributes.at("normalized_shape").at(0).get<int64_t>();
  EXPECT_GT(eps, 0.0);

  Shape x_shape, y_shape, w_shape, b_shape;
  const auto x = load_f32(file, "input.0", &x_shape);
  const auto y = load_f32(file, "output.0", &y_shape);
  const auto w = load_f32(file, "weight.weight", &w_shape);
  const auto b = load_f32(file, "weight.bias", &b_shape);
  ASSERT_FALSE(x.empty() || y.empty() || w.empty() || b.empty());
  ASSERT_EQ(x_shape, y_shape);
  ASSERT_EQ(x_shape.back(), n);
  ASSERT_EQ(w_shape, Shape{n});
  ASSERT_EQ(b_shape, Shape{n});

  // Random affine parameters: with LayerNorm's default ones and zeros a capture that mixed up
  // weight and bias would still pass.
  bool weight_is_ones = true, bias_is_zeros = true;
  for (int64_t c = 0; c < n; ++c) {
    weight_is_ones = weight_is_ones && w[c] == 1.0;
    bias_is_zeros = bias_is_zeros && b[c] == 0.0;
  }
  EXPECT_FALSE(weight_is_ones);
  EXPECT_FALSE(bias_is_zeros);

  // torch computes in f32: allow a few f32 roundings of the terms' magnitude (measured: < 5).
  const double f32_eps = 0x1p-23;
  const int64_t rows = static_cast<int64_t>(x.size()) / n;
  double worst_ulps = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = x.data() + r * n;
    double mean = 0;
    for (int64_t c = 0; c < n; ++c) mean += row[c];
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t c = 0; c < n; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(n);  // biased, as LayerNorm
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < n; ++c) {
      const double scaled = (row[c] - mean) * inv_std * w[c];
      const double expected = scaled + b[c];
      const double got = y[static_cast<size_t>(r * n + c)];
      const double magnitude = std::fabs(scaled) + std::fabs(b[c]);
      const double ulps = std::fabs(got - expected) / (f32_eps * magnitude);
      worst_ulps = std::max(worst_ulps, ulps);
      ASSERT_LE(ulps, 8.0) << "row " << r << " col " << c << ": captured " << got << ", recomputed " << expected;
    }
  }
  EXPECT_GT(rows, 1);
  RecordProperty("worst_f32_ulps", std::to_string(worst_ulps));
}

TEST(ObserverFixture, ManifestOpEntriesRoundTripAndMatchTheirFiles) {
  auto manifest = FixtureManifest::load(default_fixtures_dir());
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().message;
  int op_entries = 0;
  for (const auto& e : manifest->entries) {
    if (e.kind != "op" && e.kind != "observed") continue;  // casts: tests/test_dtype.cpp
    Status verified = manifest->verify(e);
    EXPECT_TRUE(verified.is_ok()) << verified.message;
    if (e.kind != "op") continue;
    ++op_entries;
    auto problem = Problem::parse(e.problem);
    ASSERT_TRUE(problem.is_ok()) << e.path << ": " << problem.status().message;
    // The C++ side finds fixtures by the exact string: printing must give it back.
    EXPECT_EQ(problem->to_string(), e.problem) << e.path;
    const OpSpec* spec = Registry::instance().find_op(problem->op);
    ASSERT_NE(spec, nullptr) << e.path << ": no registered op " << problem->op;
    // <folder>/<op>/<fixture>.<dtype>.safetensors, the folder the op's family (family2) or a
    // group of it with its own generator (family4_blocks).
    const std::string family = "family" + spec->family;
    const std::string rest = "/" + problem->op + "/" + problem->get("fixture") + "." + dtype_name(problem->dtype) + ".safetensors";
    const size_t slash = e.path.find('/');
    const std::string folder = e.path.substr(0, slash);
    // Blocks (family "blocks") live in blocks/ (suites/fixtures/gen/family6_blocks.py) or a
    // blocks_<group>/ of a generator of their own (gen/family6_gemma2.py: blocks_gemma2/).
    const bool block_folder = spec->family == "blocks" && (folder == "blocks" || folder.rfind("blocks_", 0) == 0);
    EXPECT_TRUE(block_folder || folder == family || folder.rfind(family + "_", 0) == 0) << e.path << ": not under " << family;
    EXPECT_EQ(slash == std::string::npos ? e.path : e.path.substr(slash), rest) << e.path;
    auto file = SafetensorsFile::open(manifest->full_path(e));
    ASSERT_TRUE(file.is_ok()) << file.status().message;
    EXPECT_EQ((*file)->metadata().at("problem"), e.problem) << e.path;
    ASSERT_FALSE((*file)->entries().empty());
    // In family 1 the first input holds the problem's shape (docs/ops-family1.md); family 2's
    // shapes are descriptors (MxNxK, TxVxD).
    if (spec->family != "1") continue;
    bool shape_found = false;
    for (const auto& entry : (*file)->entries())
      if (entry.name == "x" || entry.name == "a" || entry.name == "logits") shape_found = entry.shape == problem->shape;
    EXPECT_TRUE(shape_found) << e.path << ": no first input of shape " << shape_to_string(problem->shape);
  }
  EXPECT_GE(op_entries, 21 * 2);
}

}  // namespace
}  // namespace dnnb
