// The cast op bit for bit (docs/ops-family4.md, "cast"). check compares a cast's values (NaN by
// NaN-ness, zero equal to minus zero); here the bit patterns:
//  - CastFixture: core/dtype.cpp's conversion of a source encoding (decode to f32, encode to the
//    target; the reference's) against torch's, over every encoding of each 8- and 16-bit source
//    (the fixtures' every.torch.y and the 8-bit cases' x) and the f32 edge cases, for every pair.
//  - CastKernels: every implementation on every device here, every pair, each source contiguous,
//    transposed and padded, holding every encoding of an 8- or 16-bit source (or the f32 edge set
//    of the target), against that conversion bit for bit: the sign of zero, and the core's NaN
//    encodings (a quiet NaN with the input's sign: f16 0x7E00, bf16 0x7FC0, fp8 0x7F; an f32
//    result keeps the decoded payload); a same-dtype cast copies the bits. The reference stores
//    through float64, so its NaN payloads are held to NaN-ness only.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/host_device.h"
#include "core/safetensors.h"
#include "suites/ops/cast_desc.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

const std::string kFixtures = std::string(DNNB_SOURCE_DIR) + "/suites/fixtures/family4/cast/";

uint32_t element_bits(const void* base, DType dtype, int64_t i) {
  uint32_t bits = 0;
  const size_t size = dtype_size(dtype);
  std::memcpy(&bits, static_cast<const char*>(base) + i * size, size);
  return bits;
}

float decode(DType dtype, uint32_t bits) {
  switch (dtype) {
    case DType::f16: return f16_to_f32(static_cast<uint16_t>(bits));
    case DType::bf16: return bf16_to_f32(static_cast<uint16_t>(bits));
    case DType::f8_e4m3fn: return f8_e4m3fn_to_f32(static_cast<uint8_t>(bits));
    case DType::f8_e5m2: return f8_e5m2_to_f32(static_cast<uint8_t>(bits));
    default: return std::bit_cast<float>(bits);
  }
}

uint32_t encode(DType dtype, float value) {
  switch (dtype) {
    case DType::f16: return f32_to_f16(value);
    case DType::bf16: return f32_to_bf16(value);
    case DType::f8_e4m3fn: return f32_to_f8_e4m3fn(value);
    case DType::f8_e5m2: return f32_to_f8_e5m2(value);
    default: return std::bit_cast<uint32_t>(value);
  }
}

// The cast of one encoding as core/dtype.cpp makes it; a same-dtype cast keeps the bits.
uint32_t core_cast(DType from, DType to, uint32_t bits) { return from == to ? bits : encode(to, decode(from, bits)); }

bool is_nan(DType dtype, uint32_t bits) { return std::isnan(decode(dtype, bits)); }

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%X", v);
  return buf;
}

// Compares n results with the core's casts of the sources; NaN-ness only where nan_loose says
// so for a NaN expected value. Reports the first mismatches and their count.
void expect_casts(DType from, DType to, const void* src, const void* got, int64_t n, bool nan_loose,
                  const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t x = element_bits(src, from, i), want = core_cast(from, to, x), have = element_bits(got, to, i);
    const bool ok = have == want || (nan_loose && is_nan(to, want) && is_nan(to, have));
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " x " << hex(x) << " (" << dtype_name(from) << ") gives "
                    << hex(have) << ", the core's cast is " << hex(want) << " (" << dtype_name(to) << ")";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << n << " elements differ";
}

// ---- torch against the core -------------------------------------------------------------------

TEST(CastFixture, CoreMatchesTorchOnEveryCase) {
  int files = 0;
  for (DType from : ops::cast_dtypes())
    for (DType to : ops::cast_dtypes()) {
      if (from == to) continue;
      const std::string name = std::string(dtype_size(from) == 1 ? "every_to_" : "edges_to_") + dtype_name(to) +
                               "." + dtype_name(from) + ".safetensors";
      SCOPED_TRACE(name);
      auto file = SafetensorsFile::open(kFixtures + name);
      ASSERT_TRUE(file.is_ok()) << file.status().message;
      auto x = (*file)->load("x", scratch_host());
      auto y = (*file)->load("torch.y", scratch_host());
      ASSERT_TRUE(x.is_ok() && y.is_ok());
      ASSERT_EQ(x->dtype, from);
      ASSERT_EQ(y->dtype, to);
      ASSERT_EQ(x->numel(), y->numel());
      // torch's NaN bits of 16- and 32-bit results vary by CPU path: the fixture stores one
      // canonical NaN there and only NaN-ness is compared; fp8 NaN bits are torch's own.
      const bool nan_loose = dtype_size(to) > 1;
      expect_casts(from, to, x->host_data(), y->host_data(), x->numel(), nan_loose, name + " x");
      if (dtype_size(from) == 1) EXPECT_EQ(x->numel(), 256);
      if (dtype_size(from) == 2 && to != DType::f32) {
        auto every = (*file)->load("every.torch.y", scratch_host());
        ASSERT_TRUE(every.is_ok()) << every.status().message;
        ASSERT_EQ(every->numel(), 65536);
        std::vector<uint16_t> codes(65536);
        for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
        expect_casts(from, to, codes.data(), every->host_data(), 65536, nan_loose, name + " every encoding");
      }
      ++files;
    }
  EXPECT_EQ(files, 20);
}

// ---- every kernel against the core ------------------------------------------------------------

// Shapes holding every encoding of the source once (the f32 edge set for an f32 source), in the
// three layouts.
std::vector<std::string> problems_of(DType from, DType to) {
  const std::string shape = from == DType::f32 ? "512x512" : dtype_size(from) == 2 ? "256x256" : "16x16";
  const std::string target = from == to ? "" : std::string("y.dt=") + dtype_name(to);
  std::vector<std::string> out;
  for (const char* layout : {"", "layout=transposed", "layout=padded"}) {
    std::string params = layout;
    if (!target.empty()) params += (params.empty() ? "" : ",") + target;
    out.push_back(std::string("cast:") + dtype_name(from) + ":" + shape + (params.empty() ? "" : ":" + params));
  }
  return out;
}

TEST(CastKernels, EveryPairBitExactOnEveryBackend) {
  const OpSpec* spec = Registry::instance().find_op("cast");
  ASSERT_NE(spec, nullptr);
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  for (DType from : ops::cast_dtypes())
    for (DType to : ops::cast_dtypes())
      for (const std::string& text : problems_of(from, to)) {
        SCOPED_TRACE(text);
        auto problem = Problem::parse(text);
        ASSERT_TRUE(problem.is_ok()) << problem.status().message;
        auto sig = spec->signature(*problem);
        ASSERT_TRUE(sig.is_ok()) << sig.status().message;
        ASSERT_EQ(sig->outputs[0].dtype, to);
        auto inputs = make_random_inputs(*spec, *problem, *sig);
        ASSERT_TRUE(inputs.is_ok()) << inputs.status().message;
        const Tensor& host_x = (*inputs)[0];
        if (from != DType::f32) {
          const int64_t codes = int64_t{1} << (8 * dtype_size(from));
          ASSERT_EQ(host_x.numel(), codes) << "the problem holds every encoding once";
        } else if (to != DType::f32) {
          ASSERT_GE(host_x.numel(), static_cast<int64_t>(ops::cast_f32_edges(to).size())) << "the whole edge set";
        }
        for (const auto& r : testing::runners(*problem, skipped)) {
          SCOPED_TRACE(r.label);
          auto x = make_device_input(*r.device, sig->inputs[0]);
          auto y = empty_tensor(*r.device, to, problem->shape);
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
          expect_casts(from, to, host_x.host_data(), got->host_data(), host_x.numel(),
                       r.impl->backend == "reference", text + "@" + r.label);
        }
      }
  ran.print();
  testing::print_skipped(skipped);
}

// Contiguous views that start off a 16-byte boundary (x 3 elements in, y 5) and end in a partial
// step: the kernels' unaligned paths, heads and tails. Elements past the views must stay as they
// were.
TEST(CastKernels, OddOffsetsBitExact) {
  const OpSpec* spec = Registry::instance().find_op("cast");
  ASSERT_NE(spec, nullptr);
  constexpr int64_t kN = 1000, kXOffset = 3, kYOffset = 5, kSpare = 40;
  std::vector<std::string> skipped;
  for (DType from : ops::cast_dtypes())
    for (DType to : ops::cast_dtypes()) {
      const std::string text = std::string("cast:") + dtype_name(from) + ":" + std::to_string(kN) +
                               (from == to ? "" : std::string(":y.dt=") + dtype_name(to));
      SCOPED_TRACE(text);
      auto problem = Problem::parse(text);
      ASSERT_TRUE(problem.is_ok());
      auto sig = spec->signature(*problem);
      ASSERT_TRUE(sig.is_ok()) << sig.status().message;
      auto inputs = make_random_inputs(*spec, *problem, *sig);
      ASSERT_TRUE(inputs.is_ok());
      const Tensor& host_x = (*inputs)[0];
      // A y buffer of a recognisable byte outside the view.
      auto host_y = empty_tensor(scratch_host(), to, {kN + kSpare});
      ASSERT_TRUE(host_y.is_ok());
      std::memset(host_y->host_data(), 0x5A, storage_bytes(to, kN + kSpare));
      for (const auto& r : testing::runners(*problem, skipped)) {
        SCOPED_TRACE(r.label);
        auto xbuf = empty_tensor(*r.device, from, {kN + kSpare});
        auto ybuf = empty_tensor(*r.device, to, {kN + kSpare});
        ASSERT_TRUE(xbuf.is_ok() && ybuf.is_ok());
        ASSERT_TRUE(copy_tensor(*ybuf, *host_y).is_ok());
        auto x = xbuf->slice(0, kXOffset, kN);
        auto y = ybuf->slice(0, kYOffset, kN);
        ASSERT_TRUE(x.is_ok() && y.is_ok());
        ASSERT_TRUE(copy_tensor(*x, host_x).is_ok());
        OpCall call{*problem, *r.device, {*x}, {*y}, Tensor{}};
        Status s = r.impl->run(call);
        if (s.is_ok()) s = r.device->synchronize();
        ASSERT_TRUE(s.is_ok()) << s.message;
        auto whole = to_host(*ybuf);
        ASSERT_TRUE(whole.is_ok());
        const auto* bytes = static_cast<const uint8_t*>(whole->host_data());
        const size_t size = dtype_size(to);
        expect_casts(from, to, host_x.host_data(), bytes + kYOffset * size, kN, r.impl->backend == "reference",
                     text + "@" + r.label);
        for (int64_t i = 0; i < kN + kSpare; ++i) {
          if (i >= kYOffset && i < kYOffset + kN) continue;
          for (size_t b = 0; b < size; ++b) ASSERT_EQ(bytes[i * size + b], 0x5A) << "element " << i << " written";
        }
      }
    }
  testing::print_skipped(skipped);
}

}  // namespace
}  // namespace dnnb
