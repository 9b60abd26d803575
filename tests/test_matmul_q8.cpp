// The 8-bit products (docs/ops-family4.md, "matmul_i8" and "matmul_f8") beyond what check's
// random cases and fixtures reach:
//  - MatmulQ8Desc: the limits are bad input naming the key (K past the int32 bound, e5m2 x e5m2,
//    row scales with a non-bf16 y, an unknown scale mode).
//  - MatmulI8Kernels.ExtremesAtLargestK: every implementation on every device here, at the
//    largest K, with every row of a and column of b one of the extreme values (-128, -127, 127),
//    so y holds each extreme product sum: 131071 x 16384 = 2147467264 (just below 2^31) and
//    -2130690048 among them (oneDNN, whose sums pass through f32, is held to the f32 rounding of
//    each: its documented deviation; it runs only on CPUs with VNNI). VPDPBUSD's (a + 128) b
//    sums pass 2^31 here and wrap; the result must still be exact. Also with b transposed.
//  - MatmulF8Kernels.EveryProductExact: K = 1, a a column of every finite encoding, b a row of
//    every finite encoding of its format, unit scales, y f32: every y[i, j] is the exact product
//    a_i b_j (8-bit mantissas: exact in f32; a zero product compares equal to either zero, as
//    the sum starts from +0), so each implementation's decoding of every code
//    pair is checked bit for bit; e4m3fn x e4m3fn, e5m2 x e4m3fn and e4m3fn x e5m2.
//  - MatmulI8Amx.EmulatedTilesMatchExactSums: the AMX-INT8 path of the AVX-512 kernel
//    (kernels/avx512/matmul_q8.h: packing to tile rows, 32 x 32 blocks of TDPBSSD, tasks) on a
//    model of the tile instructions (the SDM's TILELOADD, TILESTORED, TILEZERO, TDPBSSD), so it
//    is checked on CPUs without AMX; odd shapes, K not a multiple of the tile depth (64).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/host_device.h"
#include "core/rng.h"
#include "kernels/avx512/matmul_q8.h"
#include "suites/ops/matmul_q_desc.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

Status signature_status(const std::string& text) {
  auto problem = Problem::parse(text);
  if (!problem) return problem.status();
  const OpSpec* spec = Registry::instance().find_op(problem->op);
  if (spec == nullptr) return Status::error("no op " + problem->op);
  auto sig = spec->signature(*problem);
  return sig ? Status::ok() : sig.status();
}

TEST(MatmulQ8Desc, LimitsAreBadInputNamingTheKey) {
  EXPECT_TRUE(signature_status("matmul_i8:i8:8x8x131071").is_ok());
  const Status k = signature_status("matmul_i8:i8:8x8x131072");
  EXPECT_EQ(k.code, StatusCode::bad_input);
  EXPECT_NE(k.message.find("K=131072"), std::string::npos) << k.message;
  const Status both = signature_status("matmul_f8:f8_e4m3fn:8x8x8:a.dt=f8_e5m2,b.dt=f8_e5m2");
  EXPECT_EQ(both.code, StatusCode::bad_input);
  EXPECT_NE(both.message.find("b.dt=f8_e5m2"), std::string::npos) << both.message;
  const Status row = signature_status("matmul_f8:f8_e4m3fn:8x8x8:scale=row,y.dt=f32");
  EXPECT_EQ(row.code, StatusCode::bad_input);
  EXPECT_NE(row.message.find("y.dt"), std::string::npos) << row.message;
  const Status mode = signature_status("matmul_f8:f8_e4m3fn:8x8x8:scale=block");
  EXPECT_EQ(mode.code, StatusCode::bad_input);
  EXPECT_NE(mode.message.find("scale=block"), std::string::npos) << mode.message;
  EXPECT_TRUE(signature_status("matmul_f8:f8_e4m3fn:8x8x8:b.dt=f8_e5m2,scale=row").is_ok());
  EXPECT_TRUE(signature_status("matmul_f8:f8_e4m3fn:8x8x8:y.dt=f16").is_ok());
}

// Runs every implementation of `text` on its devices with the given host inputs; calls
// check(label, y on the host) for each.
template <class Check>
void run_everywhere(const std::string& text, const std::vector<Tensor>& host_inputs, Check&& check) {
  auto problem = Problem::parse(text);
  ASSERT_TRUE(problem.is_ok()) << problem.status().message;
  const OpSpec* spec = Registry::instance().find_op(problem->op);
  ASSERT_NE(spec, nullptr);
  auto sig = spec->signature(*problem);
  ASSERT_TRUE(sig.is_ok()) << sig.status().message;
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  int ran_count = 0;
  for (const auto& r : testing::runners(*problem, skipped)) {
    SCOPED_TRACE(r.label);
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < sig->inputs.size(); ++i) {
      auto t = make_device_input(*r.device, sig->inputs[i]);
      ASSERT_TRUE(t.is_ok()) << t.status().message;
      ASSERT_TRUE(copy_tensor(*t, host_inputs[i]).is_ok());
      inputs.push_back(*t);
    }
    auto y = empty_tensor(*r.device, sig->outputs[0].dtype, sig->outputs[0].shape);
    ASSERT_TRUE(y.is_ok());
    OpCall call{*problem, *r.device, inputs, {*y}, Tensor{}};
    Status s = ran.time(r.label, text, [&] {
      Status st = r.impl->run(call);
      return st.is_ok() ? r.device->synchronize() : st;
    });
    // A peer may refuse a layout only at run time (cuBLASLt's heuristic has no 8-bit algorithm
    // unless a and b are K-contiguous): listed with its reason, as check lists it unsupported.
    if (s.code == StatusCode::unsupported) {
      skipped.push_back(r.label + " " + text + ": " + s.message);
      continue;
    }
    ASSERT_TRUE(s.is_ok()) << s.message;
    auto got = to_host(*y);
    ASSERT_TRUE(got.is_ok());
    check(r.label, *got);
    ++ran_count;
  }
  ran.print();
  testing::print_skipped(skipped);
  EXPECT_GT(ran_count, 0) << text << ": no implementation ran";
}

Tensor host_tensor(DType dtype, const Shape& shape) {
  auto t = empty_tensor(scratch_host(), dtype, shape);
  EXPECT_TRUE(t.is_ok());
  return *t;
}

TEST(MatmulI8Kernels, ExtremesAtLargestK) {
  const int64_t k = ops::kMatmulI8MaxK;
  const int8_t values[3] = {-128, -127, 127};
  for (const char* layout : {"", ":b.layout=transposed"}) {
    const std::string text = "matmul_i8:i8:3x3x" + std::to_string(k) + layout;
    Tensor a = host_tensor(DType::i8, {3, k}), b = host_tensor(DType::i8, {k, 3});
    auto* pa = static_cast<int8_t*>(a.host_data());
    auto* pb = static_cast<int8_t*>(b.host_data());
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t p = 0; p < k; ++p) pa[i * k + p] = values[i];
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < 3; ++j) pb[p * 3 + j] = values[j];
    run_everywhere(text, {a, b}, [&](const std::string& label, const Tensor& y) {
      const auto* py = static_cast<const int32_t*>(y.host_data());
      // oneDNN's known deviation (kernels/peers/onednn/matmul_i8.cpp): its sums pass through f32.
      const bool via_f32 = label.rfind("onednn", 0) == 0;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          const int64_t exact = static_cast<int64_t>(values[i]) * values[j] * k;
          const int64_t want = via_f32 ? static_cast<int64_t>(static_cast<float>(exact)) : exact;
          EXPECT_EQ(py[i * 3 + j], want) << label << " " << text << " y[" << i << ", " << j << "]";
        }
    });
  }
}

std::vector<uint8_t> finite_codes(DType dtype) {
  std::vector<uint8_t> codes;
  for (int c = 0; c < 256; ++c) {
    const bool finite = dtype == DType::f8_e4m3fn ? (c & 0x7F) != 0x7F : (c & 0x7C) != 0x7C;
    if (finite) codes.push_back(static_cast<uint8_t>(c));
  }
  return codes;
}

TEST(MatmulF8Kernels, EveryProductExact) {
  for (const auto& [fa, fb] : {std::pair{DType::f8_e4m3fn, DType::f8_e4m3fn}, std::pair{DType::f8_e5m2, DType::f8_e4m3fn},
                               std::pair{DType::f8_e4m3fn, DType::f8_e5m2}}) {
    const std::vector<uint8_t> ca = finite_codes(fa), cb = finite_codes(fb);
    const int64_t m = static_cast<int64_t>(ca.size()), n = static_cast<int64_t>(cb.size());
    std::string text = "matmul_f8:f8_e4m3fn:" + std::to_string(m) + "x" + std::to_string(n) + "x1:";
    if (fa == DType::f8_e5m2) text += "a.dt=f8_e5m2,";
    if (fb == DType::f8_e5m2) text += "b.dt=f8_e5m2,";
    text += "y.dt=f32";
    Tensor a = host_tensor(fa, {m, 1}), b = host_tensor(fb, {1, n});
    Tensor sa = host_tensor(DType::f32, {1}), sb = host_tensor(DType::f32, {1});
    std::memcpy(a.host_data(), ca.data(), ca.size());
    std::memcpy(b.host_data(), cb.data(), cb.size());
    const float one = 1.0f;
    std::memcpy(sa.host_data(), &one, 4);
    std::memcpy(sb.host_data(), &one, 4);
    run_everywhere(text, {a, b, sa, sb}, [&](const std::string& label, const Tensor& y) {
      const auto* py = static_cast<const float*>(y.host_data());
      int64_t wrong = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const double want = load_element(ca.data(), fa, i) * load_element(cb.data(), fb, j);
          const float got = py[i * n + j];
          if (static_cast<double>(got) != want) {
            if (++wrong <= 5)
              ADD_FAILURE() << label << " " << text << ": code 0x" << std::hex << int(ca[i]) << " x 0x" << int(cb[j])
                            << std::dec << " gives " << got << ", not " << want;
          }
        }
      EXPECT_EQ(wrong, 0) << label << " " << text;
    });
  }
}

// The tile instructions of AMX-INT8 as the SDM describes them, on 8 tiles of 16 rows x 64 bytes.
struct EmuTiles {
  static inline thread_local uint8_t tiles[8][16][64];
  static inline thread_local bool configured = false;
  static void load_config(const amx::TileConfig& config) {
    for (int t = 0; t < 8; ++t) ASSERT_TRUE(config.rows[t] == 16 && config.colsb[t] == 64);
    configured = true;
  }
  static void release() { configured = false; }
  template <int T>
  static void zero() {
    ASSERT_TRUE(configured);
    std::memset(tiles[T], 0, sizeof tiles[T]);
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    ASSERT_TRUE(configured);
    for (int r = 0; r < 16; ++r) std::memcpy(tiles[T][r], static_cast<const char*>(base) + r * stride, 64);
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    ASSERT_TRUE(configured);
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<char*>(base) + r * stride, tiles[T][r], 64);
  }
  // C[m][n] += sum over words k and bytes i of A[m][4k + i] B[k][4n + i], signed bytes, s32 wrapping.
  template <int C, int A, int B>
  static void dpbssd() {
    ASSERT_TRUE(configured);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        uint32_t c;
        std::memcpy(&c, &tiles[C][m][4 * n], 4);
        for (int k = 0; k < 16; ++k)
          for (int i = 0; i < 4; ++i)
            c += static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(tiles[A][m][4 * k + i])) *
                                       static_cast<int8_t>(tiles[B][k][4 * n + i]));
        std::memcpy(&tiles[C][m][4 * n], &c, 4);
      }
  }
};

TEST(MatmulI8Amx, EmulatedTilesMatchExactSums) {
  Rng rng(28);
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {33, 40, 67}, {64, 96, 256}, {70, 31, 130}}) {
    for (bool b_transposed : {false, true}) {
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + (b_transposed ? " b^T" : ""));
      std::vector<int8_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      for (auto& v : a) v = static_cast<int8_t>(static_cast<uint8_t>(rng.next() >> 56));
      for (auto& v : b) v = static_cast<int8_t>(static_cast<uint8_t>(rng.next() >> 56));
      // b stored [K, N] row-major, or [N, K] (transposed): element (p, j) at p * brs + j * bcs.
      std::vector<int8_t> stored = b;
      const int64_t brs = b_transposed ? 1 : n, bcs = b_transposed ? k : 1;
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) stored[static_cast<size_t>(p * brs + j * bcs)] = b[static_cast<size_t>(p * n + j)];
      auto word = [&](auto&& at, int64_t w) {
        uint32_t v = 0;
        for (int64_t s = 0; s < 4 && 4 * w + s < k; ++s) v |= static_cast<uint32_t>(static_cast<uint8_t>(at(4 * w + s))) << (8 * s);
        return v;
      };
      auto word_a = [&](int64_t i, int64_t w) { return word([&](int64_t p) { return a[static_cast<size_t>(i * k + p)]; }, w); };
      auto word_b = [&](int64_t w, int64_t j) {
        return word([&](int64_t p) { return stored[static_cast<size_t>(p * brs + j * bcs)]; }, w);
      };
      const avx512::q8::Packed packed =
          avx512::q8::pack(m, n, (k + 3) / 4, word_a, word_b, avx512::q8::kAmxRows, avx512::q8::kAmxWords);
      std::vector<int32_t> y(static_cast<size_t>(m * n), 0x5A5A5A5A);
      avx512::q8::multiply_amx<EmuTiles>(packed, [&](int64_t i, int64_t j0, const int32_t* sums, int64_t cols) {
        std::memcpy(y.data() + i * n + j0, sums, static_cast<size_t>(cols) * sizeof(int32_t));
      });
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t want = 0;
          for (int64_t p = 0; p < k; ++p) want += int64_t{a[static_cast<size_t>(i * k + p)]} * b[static_cast<size_t>(p * n + j)];
          ASSERT_EQ(y[static_cast<size_t>(i * n + j)], want) << "y[" << i << ", " << j << "]";
        }
    }
  }
}

}  // namespace
}  // namespace dnnb
