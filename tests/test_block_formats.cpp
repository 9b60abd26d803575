// The block number formats of core/dtype.h (q8_0, q4_0, mxfp8, mxfp4): traits and byte
// counts, decoding of hand-built blocks, quantize_row against hand-computed blocks (ggml's
// and OCP MX's rules, docs/numerics.md), and tensors of block formats and of f4_e2m1 through
// views, copies and a device the host cannot read. Optionally q8_0 / q4_0 against gguf-py's
// quantizers (skipped when python3 has no gguf module).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/host_device.h"
#include "core/safetensors.h"
#include "core/tensor.h"

namespace dnnb {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const DType kBlockFormats[] = {DType::q8_0, DType::q4_0, DType::mxfp8, DType::mxfp4};

std::vector<uint8_t> quantized(DType dtype, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(storage_bytes(dtype, static_cast<int64_t>(values.size())), 0xA5);
  const Status status = quantize_row(dtype, values.data(), static_cast<int64_t>(values.size()), bytes.data());
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return bytes;
}

std::vector<float> block_with(std::initializer_list<std::pair<int, float>> set) {
  std::vector<float> x(32, 0.0f);
  for (const auto& [j, v] : set) x[static_cast<size_t>(j)] = v;
  return x;
}

// Expects the decoded element `index` of `block` to be `want` (NaN-ness for NaN; the sign of 0).
void expect_element(const void* block, DType dtype, int64_t index, double want) {
  const double got = load_element(block, dtype, index);
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << dtype_name(dtype) << " element " << index << " is " << got;
  } else {
    EXPECT_EQ(got, want) << dtype_name(dtype) << " element " << index;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << dtype_name(dtype) << " element " << index;
  }
}

// ---- traits and byte counts ---------------------------------------------------------------

TEST(BlockFormats, TraitsAndStorageBytes) {
  const std::vector<std::pair<DType, int64_t>> bytes = {
      {DType::q8_0, 34}, {DType::q4_0, 18}, {DType::mxfp8, 33}, {DType::mxfp4, 17}};
  for (const auto& [dtype, block] : bytes) {
    SCOPED_TRACE(dtype_name(dtype));
    EXPECT_TRUE(is_block_format(dtype));
    EXPECT_EQ(block_values(dtype), 32);
    EXPECT_EQ(block_bytes(dtype), block);
    EXPECT_EQ(block_bits(dtype), 8 * block);
    EXPECT_EQ(storage_bytes(dtype, 0), 0u);
    EXPECT_EQ(storage_bytes(dtype, 4096), static_cast<size_t>(128 * block));
    EXPECT_TRUE(starts_storage_unit(dtype, 64));
    EXPECT_FALSE(starts_storage_unit(dtype, 16));
  }
  // Scalar formats: one value a block; f4_e2m1 counts bits and rounds up to whole bytes.
  EXPECT_EQ(storage_bytes(DType::f32, 5), 20u);
  EXPECT_EQ(storage_bytes(DType::f8_e8m0, 3), 3u);
  EXPECT_EQ(block_bits(DType::f4_e2m1), 4);
  EXPECT_EQ(storage_bytes(DType::f4_e2m1, 3), 2u);
  EXPECT_EQ(storage_bytes(DType::f4_e2m1, 4), 2u);
  EXPECT_TRUE(starts_storage_unit(DType::f4_e2m1, 2));
  EXPECT_FALSE(starts_storage_unit(DType::f4_e2m1, 3));
  EXPECT_TRUE(starts_storage_unit(DType::bf16, 3));
}

TEST(BlockFormatsDeathTest, BrokenPreconditionsAbortWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(storage_bytes(DType::q8_0, 33), "33 values of q8_0 are not a whole number");
  EXPECT_DEATH(storage_bytes(DType::f32, -1), "not a whole number");
  EXPECT_DEATH(dtype_size(DType::q4_0), "count bytes with storage_bytes");
  EXPECT_DEATH(dtype_size(DType::f4_e2m1), "count bytes with storage_bytes");
  std::vector<uint8_t> block(33);
  EXPECT_DEATH(store_element(block.data(), DType::mxfp8, 0, 1.0), "quantize_row");
}

// ---- decoding hand-built blocks -----------------------------------------------------------

TEST(BlockFormats, Q8_0DecodesScaleTimesInt8) {
  // Two blocks: d = 0.5 (f16 0x3800) with q = 8j - 128, then d = -2 (0xC000) with q = 127 - j.
  std::vector<uint8_t> row(68);
  row[0] = 0x00, row[1] = 0x38;
  for (int j = 0; j < 32; ++j) row[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(8 * j - 128));
  row[34] = 0x00, row[35] = 0xC0;
  for (int j = 0; j < 32; ++j) row[36 + j] = static_cast<uint8_t>(127 - j);
  for (int j = 0; j < 32; ++j) {
    expect_element(row.data(), DType::q8_0, j, 0.5 * (8 * j - 128));
    expect_element(row.data(), DType::q8_0, 32 + j, -2.0 * (127 - j));
  }
}

TEST(BlockFormats, Q4_0DecodesGgmlNibbleOrder) {
  // Byte k of the 16 holds element k in its low nibble and element k + 16 in its high one;
  // value = d x (q - 8), here d = -0.25 (f16 0xB400), low nibbles k, high nibbles 15 - k.
  std::vector<uint8_t> block(18);
  block[0] = 0x00, block[1] = 0xB4;
  for (int k = 0; k < 16; ++k) block[2 + k] = static_cast<uint8_t>(k | ((15 - k) << 4));
  for (int k = 0; k < 16; ++k) {
    expect_element(block.data(), DType::q4_0, k, -0.25 * (k - 8));
    expect_element(block.data(), DType::q4_0, 16 + k, -0.25 * (15 - k - 8));
  }
}

TEST(BlockFormats, Mxfp8DecodesPowerOfTwoTimesE4m3) {
  // Scale 0x80 = 2^1; every E4M3 code in turn (8 blocks of 32 cover all 256).
  std::vector<uint8_t> row(8 * 33);
  for (int b = 0; b < 8; ++b) {
    row[b * 33] = 0x80;
    for (int j = 0; j < 32; ++j) row[b * 33 + 1 + j] = static_cast<uint8_t>(32 * b + j);
  }
  for (int code = 0; code < 256; ++code)
    expect_element(row.data(), DType::mxfp8, code, 2.0 * f8_e4m3fn_to_f32(static_cast<uint8_t>(code)));
  expect_element(row.data(), DType::mxfp8, 0x7E, 896.0);   // 448 x 2
  expect_element(row.data(), DType::mxfp8, 0xB8, -2.0);    // -1 x 2
  expect_element(row.data(), DType::mxfp8, 0x80, -0.0);
  expect_element(row.data(), DType::mxfp8, 0x7F, kNan);    // the element's NaN
  // The scale's extremes, exact in double; 0xFF (NaN) makes the whole block NaN.
  std::vector<uint8_t> block(33, 0x7E);  // elements 448
  block[0] = 0x00;
  expect_element(block.data(), DType::mxfp8, 5, std::ldexp(448.0, -127));
  block[0] = 0xFE;
  expect_element(block.data(), DType::mxfp8, 5, std::ldexp(448.0, 127));  // beyond f32's range
  block[0] = 0xFF;
  for (int j = 0; j < 32; ++j) expect_element(block.data(), DType::mxfp8, j, kNan);
}

TEST(BlockFormats, Mxfp4DecodesOcpPairOrder) {
  // Byte k of the 16 holds element 2k in its low nibble and 2k + 1 in its high one (the OCP
  // order, torch's float4_e2m1fn_x2; ggml's GGML_TYPE_MXFP4 splits halves like q4_0 instead).
  const double magnitude[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  std::vector<uint8_t> block(17);
  block[0] = 0x7E;  // 2^-1
  for (int k = 0; k < 16; ++k) block[1 + k] = static_cast<uint8_t>((2 * k % 16) | (((2 * k + 1) % 16) << 4));
  for (int j = 0; j < 32; ++j) {
    const int code = j % 16;
    const double value = code < 8 ? magnitude[code] : -magnitude[code - 8];
    expect_element(block.data(), DType::mxfp4, j, 0.5 * value);
  }
  block[0] = 0xFF;
  expect_element(block.data(), DType::mxfp4, 0, kNan);
}

// ---- quantize_row ---------------------------------------------------------------------------

TEST(BlockFormats, Q8_0QuantizesAsGgml) {
  // amax 127 gives d = 1 exactly, so q = roundf(x): ties go away from zero (2.5 -> 3).
  const auto a = quantized(DType::q8_0, block_with({{0, 127}, {1, 2.5f}, {2, -2.5f}, {3, 0.5f}, {4, -0.5f},
                                                    {5, 1.49f}, {6, -126.5f}, {8, -0.0f}, {9, 3.7f},
                                                    {10, -3.2f}, {12, 126.49f}, {13, 64.5f}}));
  EXPECT_EQ(a[0], 0x00);
  EXPECT_EQ(a[1], 0x3C);
  const std::vector<int> q = {127, 3, -3, 1, -1, 1, -127, 0, 0, 4, -3, 0, 126, 65};
  for (size_t j = 0; j < q.size(); ++j) EXPECT_EQ(static_cast<int8_t>(a[2 + j]), q[j]) << j;
  // The amax at a negative value: x = (j - 16) / 2, amax 8 at x[0]. d = 8/127 in f32, f16
  // 0x2C08 (0.06298828125); 1/d = 15.875, so -4 -> -63.5 -> -64 and 4.5 -> 71.4375 -> 71.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(j - 16);
  const auto b = quantized(DType::q8_0, x);
  EXPECT_EQ(b[0], 0x08);
  EXPECT_EQ(b[1], 0x2C);
  const std::vector<int> qb = {-127, -119, -111, -103, -95, -87, -79, -71, -64, -56, -48, -40, -32, -24, -16, -8,
                               0,    8,    16,   24,   32,  40,  48,  56,  64,  71,  79,  87,  95,  103, 111, 119};
  for (int j = 0; j < 32; ++j) EXPECT_EQ(static_cast<int8_t>(b[2 + j]), qb[j]) << j;
  // Decoded: d x q with the f16 d.
  expect_element(b.data(), DType::q8_0, 0, 0.06298828125 * -127);
}

TEST(BlockFormats, Q4_0QuantizesAsGgml) {
  // The largest magnitude is -16 (x[5]), before +16 (x[20]): d = -16 / -8 = 2 (f16 0x4000),
  // 1/d = 0.5, q = min(15, trunc(x / 2 + 8.5)).
  const auto c = quantized(DType::q4_0, block_with({{0, 1}, {1, -1}, {2, 2.9f}, {3, -3.1f}, {4, 3}, {5, -16},
                                                    {7, 15}, {8, -15}, {20, 16}}));
  const std::vector<uint8_t> want = {0x00, 0x40, 0x89, 0x88, 0x89, 0x86, 0xFA, 0x80, 0x88, 0x8F, 0x81,
                                     0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  EXPECT_EQ(c, want);
  expect_element(c.data(), DType::q4_0, 5, -16.0);  // q = 0
  expect_element(c.data(), DType::q4_0, 20, 14.0);  // q = 16, clamped to 15
  expect_element(c.data(), DType::q4_0, 3, -4.0);   // -1.55 + 8.5 = 6.95 -> 6
  // Equal magnitudes: the first one sets the sign of d. +16 first: d = -2 (0xC000).
  const auto d = quantized(DType::q4_0, block_with({{2, 16}, {5, -16}}));
  EXPECT_EQ(d[0], 0x00);
  EXPECT_EQ(d[1], 0xC0);
  EXPECT_EQ(d[2 + 2], 0x80);  // x[2] -> q 0 (16); x[18] = 0 -> q 8
  EXPECT_EQ(d[2 + 5], 0x8F);  // x[5] -> q 15 (-14)
}

TEST(BlockFormats, Mxfp8QuantizesByTheOcpRule) {
  // amax 3 at a negative value: floor(log2 3) - 8 = -7, scale 120; elements x * 2^7 to E4M3,
  // nearest even (1.0625 ties to 1.0), 2^-13 underflows to 0.
  const auto a = quantized(DType::mxfp8, block_with({{0, 1}, {1, -3}, {2, 0.01f}, {3, 0.00830078125f},
                                                     {4, -0.0f}, {5, std::ldexp(1.0f, -20)}}));
  EXPECT_EQ(a[0], 120);
  const std::vector<uint8_t> elements = {0x70, 0xFC, 0x3A, 0x38, 0x80, 0x00, 0x00};
  for (size_t j = 0; j < elements.size(); ++j) EXPECT_EQ(a[1 + j], elements[j]) << j;
  expect_element(a.data(), DType::mxfp8, 1, -3.0);
  expect_element(a.data(), DType::mxfp8, 2, 0.009765625);  // 1.25 x 2^-7
  // Saturation: amax 3.9 keeps the scale at 2^-7, and 3.9 x 128 = 499.2, 3.7 x 128 = 473.6
  // (which would round to 480) clamp to 448.
  const auto s = quantized(DType::mxfp8, block_with({{0, 3.9f}, {1, -3.9f}, {2, 3.7f}}));
  EXPECT_EQ(s[0], 120);
  EXPECT_EQ(s[1], 0x7E);
  EXPECT_EQ(s[2], 0xFE);
  EXPECT_EQ(s[3], 0x7E);
  // The scale clamps to 2^-127: amax 2^-130 (an f32 subnormal) gives 0x00 and element 2^-3.
  const auto tiny = quantized(DType::mxfp8, block_with({{0, std::ldexp(1.0f, -130)}}));
  EXPECT_EQ(tiny[0], 0x00);
  EXPECT_EQ(tiny[1], 0x20);
  // The largest f32 exponent: 1.5 x 2^127 -> scale 2^119 (246), element 384 (0x7C).
  const auto big = quantized(DType::mxfp8, block_with({{0, std::ldexp(1.5f, 127)}}));
  EXPECT_EQ(big[0], 246);
  EXPECT_EQ(big[1], 0x7C);
  expect_element(big.data(), DType::mxfp8, 0, std::ldexp(1.5, 127));
}

TEST(BlockFormats, Mxfp4QuantizesByTheOcpRule) {
  // amax 7.5 (at -7.5): floor(log2 7.5) - 2 = 0, scale 127. E2M1 nearest even: 5 -> 4,
  // 0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 1.25 -> 1; -7.5 saturates to -6. Packed in OCP pairs.
  const auto a = quantized(DType::mxfp4, block_with({{0, -6}, {1, 5}, {2, 0.25f}, {3, 0.75f}, {4, 2.5f},
                                                     {5, 1.25f}, {7, -0.0f}, {8, -7.5f}}));
  const std::vector<uint8_t> want = {127, 0x6F, 0x20, 0x24, 0x80, 0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(a, want);
  expect_element(a.data(), DType::mxfp4, 8, -6.0);
  expect_element(a.data(), DType::mxfp4, 7, -0.0);
  // amax 1: scale 2^-2 (125); x * 4: 4 -> 4, 1.2 -> 1, -0.4 -> -0.5.
  const auto b = quantized(DType::mxfp4, block_with({{0, 1}, {1, 0.3f}, {2, -0.1f}}));
  EXPECT_EQ(b[0], 125);
  EXPECT_EQ(b[1], 0x26);
  EXPECT_EQ(b[2], 0x09);
  expect_element(b.data(), DType::mxfp4, 2, -0.125);
}

TEST(BlockFormats, ZeroBlocks) {
  const std::vector<float> zeros(32, 0.0f);
  // ggml: q8_0 d = 0 / 127 = +0; q4_0 d = 0 / -8 = -0 (0x8000) with q = 8, so values are -0.
  const auto q8 = quantized(DType::q8_0, zeros);
  EXPECT_EQ(q8, std::vector<uint8_t>(34, 0));
  const auto q4 = quantized(DType::q4_0, zeros);
  std::vector<uint8_t> want(18, 0x88);
  want[0] = 0x00, want[1] = 0x80;
  EXPECT_EQ(q4, want);
  expect_element(q4.data(), DType::q4_0, 0, -0.0);
  // MX: no log2(0); the smallest scale, 2^-127 (0x00), as torchao's to_mx gives.
  EXPECT_EQ(quantized(DType::mxfp8, zeros), std::vector<uint8_t>(33, 0));
  EXPECT_EQ(quantized(DType::mxfp4, zeros), std::vector<uint8_t>(17, 0));
}

TEST(BlockFormats, NanOrInfMakesItsBlockNan) {
  // Stated rule (docs/numerics.md): a NaN scale, zero elements; the other blocks are untouched.
  for (DType dtype : kBlockFormats) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " with " + std::to_string(bad));
      std::vector<float> x(64, 1.0f);
      x[7] = bad;
      const auto row = quantized(dtype, x);
      for (int j = 0; j < 32; ++j) expect_element(row.data(), dtype, j, kNan);
      const auto alone = quantized(dtype, std::vector<float>(32, 1.0f));
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), row.begin() + block_bytes(dtype)));
    }
  }
  const auto q8 = quantized(DType::q8_0, block_with({{3, std::numeric_limits<float>::quiet_NaN()}}));
  EXPECT_EQ(q8[0], 0x00);
  EXPECT_EQ(q8[1], 0x7E);
  const auto mx = quantized(DType::mxfp4, block_with({{3, std::numeric_limits<float>::infinity()}}));
  EXPECT_EQ(mx[0], 0xFF);
}

TEST(BlockFormats, QuantizeRowRefusesWhatIsNotWholeBlocks) {
  std::vector<float> x(33, 1.0f);
  std::vector<uint8_t> out(64);
  EXPECT_EQ(quantize_row(DType::q8_0, x.data(), 33, out.data()).code, StatusCode::bad_input);
  EXPECT_EQ(quantize_row(DType::f32, x.data(), 32, out.data()).code, StatusCode::unsupported);
  EXPECT_TRUE(quantize_row(DType::q4_0, x.data(), 0, out.data()).is_ok());
}

// ---- tensors ----------------------------------------------------------------------------------

// Device memory the host cannot read: copies go through upload/download, which check bounds.
class OpaqueDevice final : public DeviceRuntime {
 public:
  const DeviceInfo& info() const override { return info_; }
  Result<BufferPtr> allocate(size_t bytes) override {
    auto buffer = std::make_shared<Buffer>();
    buffer->device = this;
    buffer->bytes = bytes;
    buffer->handle = new uint8_t[bytes + 1];
    return buffer;
  }
  Status upload(Buffer& dst, size_t offset, const void* src, size_t bytes) override {
    if (offset + bytes > dst.bytes) return Status::error("upload past the buffer's end");
    std::memcpy(static_cast<uint8_t*>(dst.handle) + offset, src, bytes);
    return Status::ok();
  }
  Status download(void* dst, const Buffer& src, size_t offset, size_t bytes) override {
    if (offset + bytes > src.bytes) return Status::error("download past the buffer's end");
    std::memcpy(dst, static_cast<const uint8_t*>(src.handle) + offset, bytes);
    return Status::ok();
  }
  Status synchronize() override { return Status::ok(); }
  void release(Buffer& buffer) noexcept override { delete[] static_cast<uint8_t*>(buffer.handle); }

 private:
  DeviceInfo info_{"opaque:0", DeviceKind::cpu, "test device without host access", {}, {}};
};

// The values of q8_tensor: integers in [-127, 127], 127 first in every block, so that each
// block's d is 1 and every value is stored exactly.
float q8_value(int64_t i) { return i % 32 == 0 ? 127.0f : static_cast<float>((i * 7) % 255 - 127); }

// A q8_0 host tensor [rows, cols] holding q8_value(r * cols + c) at (r, c).
Tensor q8_tensor(int64_t rows, int64_t cols) {
  auto t = empty_tensor(scratch_host(), DType::q8_0, {rows, cols});
  EXPECT_TRUE(t.is_ok());
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = q8_value(static_cast<int64_t>(i));
  EXPECT_TRUE(quantize_row(DType::q8_0, x.data(), rows * cols, t->host_data()).is_ok());
  return *t;
}

std::vector<double> values_of(const Tensor& t) {
  auto host = to_host(t);
  EXPECT_TRUE(host.is_ok()) << host.status().to_string();
  std::vector<double> out;
  if (!host) return out;
  for (int64_t i = 0; i < host->numel(); ++i) out.push_back(load_element(host->host_data(), host->dtype, i));
  return out;
}

TEST(BlockTensors, EmptyTensorSizesAndRefusals) {
  auto t = empty_tensor(scratch_host(), DType::q8_0, {3, 64});
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->buffer->bytes, 3u * 2 * 34);
  EXPECT_EQ(t->describe(), "3x64:64x1+0 q8_0");
  EXPECT_EQ(empty_tensor(scratch_host(), DType::mxfp4, {2, 32})->buffer->bytes, 34u);
  EXPECT_EQ(empty_tensor(scratch_host(), DType::f4_e2m1, {3})->buffer->bytes, 2u);
  const auto odd = empty_tensor(scratch_host(), DType::q4_0, {64, 33});
  ASSERT_FALSE(odd.is_ok());
  EXPECT_EQ(odd.status().code, StatusCode::bad_input);
  EXPECT_NE(odd.status().message.find("multiple of the 32-value block"), std::string::npos) << odd.status().message;
  EXPECT_FALSE(empty_tensor(scratch_host(), DType::mxfp8, {}).is_ok());
  EXPECT_TRUE(empty_tensor(scratch_host(), DType::q8_0, {0, 32}).is_ok());
}

TEST(BlockTensors, ViewsKeepWholeBlocks) {
  Tensor t = q8_tensor(4, 64);
  // Rows and whole blocks of a row: ok, with byte offsets from storage_bytes.
  auto rows = t.slice(0, 1, 2);
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->storage_span(), 128);
  EXPECT_EQ(static_cast<uint8_t*>(rows->host_data()) - static_cast<uint8_t*>(t.host_data()), 68);
  auto second_block = t.slice(1, 32, 32);
  ASSERT_TRUE(second_block.is_ok());
  EXPECT_EQ(static_cast<uint8_t*>(second_block->host_data()) - static_cast<uint8_t*>(t.host_data()), 34);
  EXPECT_TRUE(t.reshape({256}).is_ok());
  EXPECT_TRUE(t.reshape({8, 32}).is_ok());
  EXPECT_TRUE(t.broadcast_to({3, 4, 64}).is_ok());
  // Anything that splits a block or makes the last dim strided: unsupported, with the reason.
  const auto half = t.slice(1, 16, 32);
  ASSERT_FALSE(half.is_ok());
  EXPECT_EQ(half.status().code, StatusCode::unsupported);
  EXPECT_NE(half.status().message.find("offset is not a multiple of 32"), std::string::npos) << half.status().message;
  EXPECT_FALSE(t.slice(1, 0, 48).is_ok());
  EXPECT_FALSE(t.transpose(0, 1).is_ok());
  EXPECT_FALSE(t.reshape({16, 16}).is_ok());
  // f4_e2m1 views start on a byte.
  auto f4 = empty_tensor(scratch_host(), DType::f4_e2m1, {8});
  ASSERT_TRUE(f4.is_ok());
  EXPECT_TRUE(f4->slice(0, 2, 3).is_ok());
  EXPECT_FALSE(f4->slice(0, 1, 3).is_ok());
}

TEST(BlockTensors, CopyAndToHostThroughHostAndDevice) {
  Tensor t = q8_tensor(4, 64);
  const auto all = values_of(t);
  ASSERT_EQ(all.size(), 256u);
  for (int64_t i = 0; i < 256; ++i) ASSERT_EQ(all[i], q8_value(i)) << i;
  OpaqueDevice device;
  for (DeviceRuntime* where : {static_cast<DeviceRuntime*>(&scratch_host()), static_cast<DeviceRuntime*>(&device)}) {
    SCOPED_TRACE(where->info().id.empty() ? "host" : where->info().id);
    auto on = empty_tensor(*where, DType::q8_0, {4, 64});
    ASSERT_TRUE(on.is_ok());
    ASSERT_TRUE(copy_tensor(*on, t).is_ok());
    EXPECT_EQ(values_of(*on), all);
    // A strided view (rows 1..2, second block of each) into a padded destination, and back.
    auto view = on->slice(0, 1, 2)->slice(1, 32, 32);
    ASSERT_TRUE(view.is_ok());
    auto padded = empty_tensor(*where, DType::q8_0, {2, 96});
    ASSERT_TRUE(padded.is_ok());
    const std::vector<uint8_t> marker(static_cast<size_t>(padded->buffer->bytes), 0x5A);
    ASSERT_TRUE(where->upload(*padded->buffer, 0, marker.data(), marker.size()).is_ok());
    auto window = padded->slice(1, 64, 32);
    ASSERT_TRUE(window.is_ok());
    ASSERT_TRUE(copy_tensor(*window, *view).is_ok());
    const auto got = values_of(*window);
    ASSERT_EQ(got.size(), 64u);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 32; ++c) EXPECT_EQ(got[r * 32 + c], all[(1 + r) * 64 + 32 + c]) << r << "," << c;
    std::vector<uint8_t> bytes(marker.size());
    ASSERT_TRUE(where->download(bytes.data(), *padded->buffer, 0, bytes.size()).is_ok());
    // The window is block 2 of each 3-block row: blocks 0 and 1 of both rows are untouched.
    for (size_t row_start : {size_t{0}, size_t{102}})
      for (size_t i = row_start; i < row_start + 68; ++i) EXPECT_EQ(bytes[i], 0x5A) << "byte " << i << " outside the window";
  }
}

TEST(BlockTensors, F4CopiesKeepTheNeighbouringNibble) {
  auto src = empty_tensor(scratch_host(), DType::f4_e2m1, {3, 3});
  ASSERT_TRUE(src.is_ok());
  const double values[9] = {0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -6};
  for (int i = 0; i < 9; ++i) store_element(src->host_data(), DType::f4_e2m1, i, values[i]);
  OpaqueDevice device;
  for (DeviceRuntime* where : {static_cast<DeviceRuntime*>(&scratch_host()), static_cast<DeviceRuntime*>(&device)}) {
    // A transposed source (nibble gather) into 9 values at offset 2 of a 12-value buffer: the
    // destination ends inside byte 5, whose high nibble (value 11) must survive.
    auto buffer = empty_tensor(*where, DType::f4_e2m1, {12});
    ASSERT_TRUE(buffer.is_ok());
    const std::vector<uint8_t> fill(6, 0xEE);  // every value -4
    ASSERT_TRUE(where->upload(*buffer->buffer, 0, fill.data(), fill.size()).is_ok());
    auto dst = buffer->slice(0, 2, 9)->reshape({3, 3});
    ASSERT_TRUE(dst.is_ok());
    ASSERT_TRUE(copy_tensor(*dst, *src->transpose(0, 1)).is_ok());
    const auto got = values_of(*buffer);
    const std::vector<double> want = {-4, -4, 0.5, 2, 6, 1, 3, -0.5, 1.5, 4, -6, -4};
    EXPECT_EQ(got, want);
  }
}

TEST(BlockTensors, SafetensorsHasNoBlockFormats) {
  // safetensors has no dtype for a block format: the writer refuses it rather than mislabel it.
  SafetensorsWriter writer;
  const Status status = writer.add("w", q8_tensor(1, 32));
  EXPECT_EQ(status.code, StatusCode::unsupported);
  EXPECT_NE(status.message.find("q8_0"), std::string::npos) << status.message;
}

// ---- optional: gguf-py's quantizers -------------------------------------------------------

// q8_0 and q4_0 of random rows against gguf.quants (gguf-py, whose Q8_0 / Q4_0 are written to
// match ggml's reference quantizers bit for bit). Skips when the interpreter (DNNB_GGUF_PYTHON
// or python3) cannot import gguf: `pip install gguf` to run it.
TEST(BlockFormatsGguf, Q8_0AndQ4_0MatchGgufQuants) {
  const char* env = std::getenv("DNNB_GGUF_PYTHON");
  const std::string python = env != nullptr ? env : "python3";
  if (std::system((python + " -c 'import gguf.quants' >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << python << " cannot import gguf (pip install gguf, or set DNNB_GGUF_PYTHON)";
  // Blocks of normal values at several scales, plus ties and a signed maximum.
  std::mt19937 rng(26);
  std::normal_distribution<float> normal;
  std::vector<float> x;
  for (int b = 0; b < 512; ++b) {
    const float scale = std::ldexp(1.0f, b % 40 - 20);
    for (int j = 0; j < 32; ++j) x.push_back(b % 7 == 0 ? 0.5f * static_cast<float>((j * 37 + b) % 64 - 32) : scale * normal(rng));
  }
  const std::string dir = ::testing::TempDir();
  const std::string in = dir + "/dnnb_gguf_in.f32", script = dir + "/dnnb_gguf.py";
  std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size() * 4));
  std::ofstream(script) << "import sys, numpy as np\n"
                           "from gguf import quants, GGMLQuantizationType as T\n"
                           "x = np.fromfile(sys.argv[1], dtype=np.float32).reshape(-1, 32)\n"
                           "for name, t in (('q8_0', T.Q8_0), ('q4_0', T.Q4_0)):\n"
                           "    quants.quantize(x, t).tofile(sys.argv[1] + '.' + name)\n";
  ASSERT_EQ(std::system((python + " " + script + " " + in).c_str()), 0);
  for (DType dtype : {DType::q8_0, DType::q4_0}) {
    std::ifstream file(in + "." + dtype_name(dtype), std::ios::binary);
    const std::vector<uint8_t> theirs((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const auto ours = quantized(dtype, x);
    ASSERT_EQ(theirs.size(), ours.size()) << dtype_name(dtype);
    int mismatches = 0;
    for (size_t i = 0; i < ours.size(); ++i)
      if (ours[i] != theirs[i] && mismatches++ < 5)
        ADD_FAILURE() << dtype_name(dtype) << " byte " << i << " (block " << i / static_cast<size_t>(block_bytes(dtype))
                      << "): ours " << int(ours[i]) << ", gguf " << int(theirs[i]);
    EXPECT_EQ(mismatches, 0) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace dnnb
