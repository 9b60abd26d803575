// The block-format ops bit for bit (docs/ops-family4.md, "quantize_blocks", "dequantize_blocks").
// check compares decoded values; here the bytes and bit patterns:
//  - MxE5m2Core: core/dtype.cpp's mxfp8_e5m2 (E8M0 scale, E5M2 elements): decode, the OCP MX
//    rule with its saturation at 57344, the NaN and zero blocks.
//  - QuantizeBlocksFixture: quantize_row of every fixture's x against its bytes.y (gguf.quants for
//    q8_0 / q4_0, the generator's OCP MX rule with torch's E8M0 and fp8 casts).
//  - DequantizeBlocksFixture: load_element then one rounding to the target against torch.y.
//  - QuantizeBlocksKernels / DequantizeBlocksKernels: every implementation on every device here
//    (the reference included) against the core, bytes of every block; decodes bit for bit (NaN
//    by NaN-ness), for every source, format, target and layout.
//  - QuantizeStats: check's quantisation figures on a known case.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/host_device.h"
#include "core/safetensors.h"
#include "suites/ops/blocks_desc.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

const std::string kFixtures = std::string(DNNB_SOURCE_DIR) + "/suites/fixtures/family4_blocks/";

std::vector<uint8_t> quantized(DType dtype, const std::vector<float>& x) {
  std::vector<uint8_t> out(storage_bytes(dtype, static_cast<int64_t>(x.size())));
  EXPECT_TRUE(quantize_row(dtype, x.data(), static_cast<int64_t>(x.size()), out.data()).is_ok());
  return out;
}

TEST(MxE5m2Core, TraitsDecodeAndQuantize) {
  EXPECT_EQ(block_bytes(DType::mxfp8_e5m2), 33);
  EXPECT_EQ(block_values(DType::mxfp8_e5m2), 32);
  EXPECT_EQ(parse_dtype("mxfp8_e5m2"), DType::mxfp8_e5m2);
  std::vector<uint8_t> block(33, 0);
  block[0] = 128;  // 2^1
  for (int code = 0; code < 32; ++code) block[1 + code] = static_cast<uint8_t>(code * 4);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(load_element(block.data(), DType::mxfp8_e5m2, j), 2.0 * f8_e5m2_to_f32(static_cast<uint8_t>(j * 4)));
  block[0] = 0xFF;
  EXPECT_TRUE(std::isnan(load_element(block.data(), DType::mxfp8_e5m2, 3)));
  // amax 1.99 x 2^3: floor(log2) 3, X = 2^(3 - 15); 1.99 x 2^15 rounds past 57344 and saturates.
  std::vector<float> x(32, 0.0f);
  x[0] = 1.99f * 8;
  x[1] = -1.0f;
  x[2] = std::ldexp(1.0f, -30);  // 2^-18 after scaling: below E5M2's smallest subnormal 2^-16
  const auto q = quantized(DType::mxfp8_e5m2, x);
  EXPECT_EQ(q[0], 127 + 3 - 15);
  EXPECT_EQ(q[1], 0x7B);  // +57344, not Inf (0x7C)
  EXPECT_EQ(load_element(q.data(), DType::mxfp8_e5m2, 0), 57344.0 * std::ldexp(1.0, -12));
  EXPECT_EQ(load_element(q.data(), DType::mxfp8_e5m2, 1), -1.0);
  EXPECT_EQ(q[3], 0x00);
  EXPECT_EQ(quantized(DType::mxfp8_e5m2, std::vector<float>(32, 0.0f)), std::vector<uint8_t>(33, 0));
  x[5] = NAN;
  std::vector<uint8_t> nan_block(33, 0);
  nan_block[0] = 0xFF;
  EXPECT_EQ(quantized(DType::mxfp8_e5m2, x), nan_block);
}

// The fixture files of an op folder, sorted.
std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kFixtures + folder)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// "edges_to_q8_0.f32.safetensors" -> q8_0 (quantize) ; "mixed_to_bf16.q4_0..." -> q4_0 (the suffix).
DType dtype_between(const std::string& path, const std::string& after, char end) {
  const std::string name = std::filesystem::path(path).filename().string();
  const size_t start = name.find(after) + after.size();
  return *parse_dtype(name.substr(start, name.find(end, start) - start));
}

TEST(QuantizeBlocksFixture, CoreMatchesFixtureBytes) {
  int files = 0;
  for (const std::string& path : files_in("quantize_blocks")) {
    SCOPED_TRACE(path);
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message;
    auto x = (*file)->load("x", scratch_host());
    auto bytes = (*file)->load("bytes.y", scratch_host());
    ASSERT_TRUE(x.is_ok() && bytes.is_ok());
    const DType format = dtype_between(path, "_to_", '.');
    std::vector<float> values(static_cast<size_t>(x->numel()));
    for (int64_t i = 0; i < x->numel(); ++i) values[i] = static_cast<float>(load_element(x->host_data(), x->dtype, i));
    const auto ours = quantized(format, values);
    ASSERT_EQ(ours.size(), static_cast<size_t>(bytes->numel()));
    const auto* want = static_cast<const uint8_t*>(bytes->host_data());
    for (size_t i = 0; i < ours.size(); ++i)
      ASSERT_EQ(ours[i], want[i]) << "byte " << i << " (block " << i / block_bytes(format) << ")";
    ++files;
  }
  EXPECT_EQ(files, 15);
}

TEST(DequantizeBlocksFixture, CoreMatchesTorch) {
  int files = 0;
  for (const std::string& path : files_in("dequantize_blocks")) {
    SCOPED_TRACE(path);
    auto file = SafetensorsFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message;
    auto x = (*file)->load("x", scratch_host());
    auto y = (*file)->load("torch.y", scratch_host());
    ASSERT_TRUE(x.is_ok() && y.is_ok());
    const std::string name = std::filesystem::path(path).filename().string();
    const DType format = *parse_dtype(name.substr(name.find('.') + 1, name.rfind('.') - name.find('.') - 1));
    for (int64_t i = 0; i < y->numel(); ++i) {
      uint32_t slot = 0;
      store_element(&slot, y->dtype, 0, load_element(x->host_data(), format, i));
      const double ours = load_element(&slot, y->dtype, 0), torch = load_element(y->host_data(), y->dtype, i);
      if (std::isnan(torch)) {
        ASSERT_TRUE(std::isnan(ours)) << "element " << i;
      } else {
        ASSERT_EQ(std::bit_cast<uint64_t>(ours), std::bit_cast<uint64_t>(torch)) << "element " << i;
      }
    }
    ++files;
  }
  EXPECT_EQ(files, 15);
}

// ---- every kernel against the core ------------------------------------------------------------

TEST(QuantizeBlocksKernels, BytesEqualCoreOnEveryBackend) {
  const OpSpec* spec = Registry::instance().find_op("quantize_blocks");
  ASSERT_NE(spec, nullptr);
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  for (const char* source : {"f32", "f16", "bf16"})
    for (DType format : ops::block_formats())
      for (const char* shape : {"64x512", "96x160:layout=transposed", "37x96:layout=padded", "3x1x4096"}) {
        const std::string text = std::string("quantize_blocks:") + source + ":" + shape +
                                 (std::string(shape).find(':') == std::string::npos ? ":" : ",") + "y.dt=" + dtype_name(format);
        SCOPED_TRACE(text);
        auto problem = Problem::parse(text);
        ASSERT_TRUE(problem.is_ok()) << problem.status().message;
        auto sig = spec->signature(*problem);
        ASSERT_TRUE(sig.is_ok()) << sig.status().message;
        auto inputs = make_random_inputs(*spec, *problem, *sig);
        ASSERT_TRUE(inputs.is_ok()) << inputs.status().message;
        const Tensor& host_x = (*inputs)[0];
        std::vector<float> values(static_cast<size_t>(host_x.numel()));
        for (int64_t i = 0; i < host_x.numel(); ++i) values[i] = static_cast<float>(load_element(host_x.host_data(), host_x.dtype, i));
        const auto want = quantized(format, values);
        for (const auto& r : testing::runners(*problem, skipped)) {
          SCOPED_TRACE(r.label);
          auto x = make_device_input(*r.device, sig->inputs[0]);
          auto y = empty_tensor(*r.device, format, problem->shape);
          ASSERT_TRUE(x.is_ok() && y.is_ok());
          ASSERT_TRUE(copy_tensor(*x, host_x).is_ok());
          OpCall call{*problem, *r.device, {*x}, {*y}, Tensor{}};
          Status s = ran.time(r.label, text, [&] {
            Status st = r.impl->run(call);
            return st.is_ok() ? r.device->synchronize() : st;
          });
          ASSERT_TRUE(s.is_ok()) << s.message;
          auto got = to_host(*y);
          ASSERT_TRUE(got.is_ok());
          const auto* bytes = static_cast<const uint8_t*>(got->host_data());
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(bytes[i], want[i]) << "byte " << i << " (block " << i / block_bytes(format) << ")";
        }
      }
  ran.print();
  testing::print_skipped(skipped);
}

TEST(DequantizeBlocksKernels, BitExactOnEveryBackend) {
  const OpSpec* spec = Registry::instance().find_op("dequantize_blocks");
  ASSERT_NE(spec, nullptr);
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  for (DType format : ops::block_formats())
    for (DType target : {DType::f32, DType::f16, DType::bf16})
      for (const char* shape : {"128x256", "5x96", "3x1x4096", "37x160:layout=padded"}) {
        const std::string text = std::string("dequantize_blocks:") + dtype_name(format) + ":" + shape +
                                 (std::string(shape).find(':') == std::string::npos ? ":" : ",") + "y.dt=" + dtype_name(target);
        SCOPED_TRACE(text);
        auto problem = Problem::parse(text);
        ASSERT_TRUE(problem.is_ok()) << problem.status().message;
        auto sig = spec->signature(*problem);
        ASSERT_TRUE(sig.is_ok()) << sig.status().message;
        auto inputs = make_random_inputs(*spec, *problem, *sig);
        ASSERT_TRUE(inputs.is_ok()) << inputs.status().message;
        const Tensor& host_x = (*inputs)[0];
        for (const auto& r : testing::runners(*problem, skipped)) {
          SCOPED_TRACE(r.label);
          auto x = make_device_input(*r.device, sig->inputs[0]);
          auto y = empty_tensor(*r.device, target, problem->shape);
          ASSERT_TRUE(x.is_ok() && y.is_ok());
          ASSERT_TRUE(copy_tensor(*x, host_x).is_ok());
          OpCall call{*problem, *r.device, {*x}, {*y}, Tensor{}};
          Status s = ran.time(r.label, text, [&] {
            Status st = r.impl->run(call);
            return st.is_ok() ? r.device->synchronize() : st;
          });
          ASSERT_TRUE(s.is_ok()) << s.message;
          auto got = to_host(*y);
          ASSERT_TRUE(got.is_ok());
          const size_t size = dtype_size(target);
          for (int64_t i = 0; i < host_x.numel(); ++i) {
            uint32_t want = 0, have = 0;
            store_element(&want, target, 0, load_element(host_x.host_data(), format, i));
            std::memcpy(&have, static_cast<const char*>(got->host_data()) + i * size, size);
            if (std::isnan(load_element(&want, target, 0))) {
              ASSERT_TRUE(std::isnan(load_element(&have, target, 0))) << "element " << i;
            } else {
              ASSERT_EQ(have, want) << "element " << i << ": " << load_element(&have, target, 0) << " for "
                                    << load_element(&want, target, 0);
            }
          }
        }
      }
  ran.print();
  testing::print_skipped(skipped);
}

TEST(QuantizeStats, LlamaCppFigures) {
  // x = 0, 1, ..., 31 in f32; "decoded" = x + e with e = 0.5 on the first 10, 0 on the rest
  // and a NaN on element 31 (left out).
  auto x = empty_tensor(scratch_host(), DType::f32, {32});
  auto d = empty_tensor(scratch_host(), DType::f64, {32});
  ASSERT_TRUE(x.is_ok() && d.is_ok());
  for (int i = 0; i < 32; ++i) {
    static_cast<float*>(x->host_data())[i] = static_cast<float>(i);
    static_cast<double*>(d->host_data())[i] = i + (i < 10 ? 0.5 : 0.0);
  }
  static_cast<double*>(d->host_data())[31] = NAN;
  const QuantizeStats s = quantize_stats(*d, *x);
  EXPECT_EQ(s.count, 31);
  EXPECT_EQ(s.nonfinite, 1);
  EXPECT_DOUBLE_EQ(s.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(s.rmse, std::sqrt(10 * 0.25 / 31));
  EXPECT_DOUBLE_EQ(s.median, 0.0);
  EXPECT_DOUBLE_EQ(s.p95, 0.5);
  ASSERT_EQ(s.histogram.size(), 10u);
  EXPECT_EQ(s.histogram[0], 21);
  EXPECT_EQ(s.histogram[9], 10);
  EXPECT_NE(quantize_stats_line(s).find("rmse"), std::string::npos);
}

}  // namespace
}  // namespace dnnb
