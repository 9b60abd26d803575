// matmul_ggml (docs/ops-family4.md): every implementation on every device of this machine against
// the float64 reference on one-block rows (K = 32) whose results show any deviation of x's q8_0
// quantisation: halves that must round away from zero, a NaN and an Inf (the row's outputs are
// NaN), values so small that 1 / d is Inf (d's f16 is 0: the row is 0), zeros, and values so
// large that d overflows f16 (Inf x sumi, NaN where sumi = 0). With one block an output is one
// rounded product, so the tolerance is 2 ulp: a quant one off moves it by 1e-3 or more.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/host_device.h"
#include "core/registry.h"
#include "suites/ops/matmul_ggml_desc.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

constexpr int64_t kM = 6, kN = 37, kK = 32;

// Row i of x (K = 32): the edge cases above, in this order.
std::vector<double> edge_rows() {
  std::vector<double> x(static_cast<size_t>(kM * kK));
  for (int64_t c = 0; c < kK; ++c) {
    const double sign = c % 3 == 0 ? -1.0 : 1.0;
    x[0 * kK + c] = c == 0 ? 127.0 : sign * (static_cast<double>((c * 37) % 127) + 0.5);  // d = 1: halves
    x[1 * kK + c] = c == 5 ? std::numeric_limits<double>::infinity() : sign * 0.25 * static_cast<double>(c);
    x[2 * kK + c] = c == 9 ? std::numeric_limits<double>::quiet_NaN() : sign * 0.5 * static_cast<double>(c);
    x[3 * kK + c] = sign * 1e-39 * static_cast<double>(c + 1);  // d an f32 subnormal, 1 / d = Inf
    x[4 * kK + c] = 0.0;
    x[5 * kK + c] = sign * 2e7 * static_cast<double>(c + 1);  // d past f16's largest: Inf
  }
  return x;
}

TEST(MatmulGgml, EdgeRowsOnEveryBackend) {
  const OpSpec* spec = Registry::instance().find_op("matmul_ggml");
  ASSERT_NE(spec, nullptr);
  std::vector<std::string> skipped;
  testing::RanPairs ran;
  for (const char* dtype : {"q8_0", "q4_0"}) {
    const std::string text = std::string("matmul_ggml:") + dtype + ":6x37x32";
    SCOPED_TRACE(text);
    auto problem = Problem::parse(text);
    ASSERT_TRUE(problem.is_ok()) << problem.status().message;
    auto sig = spec->signature(*problem);
    ASSERT_TRUE(sig.is_ok()) << sig.status().message;
    auto inputs = make_random_inputs(*spec, *problem, *sig);  // w: random blocks, quantised by core
    ASSERT_TRUE(inputs.is_ok()) << inputs.status().message;
    const std::vector<double> xv = edge_rows();
    Tensor& host_x = (*inputs)[1];
    for (size_t i = 0; i < xv.size(); ++i) store_element(host_x.host_data(), DType::f32, static_cast<int64_t>(i), xv[i]);
    auto expected = empty_tensor(scratch_host(), DType::f64, {kM, kN});
    ASSERT_TRUE(expected.is_ok());
    std::vector<Tensor> outs = {*expected};
    ASSERT_TRUE(spec->reference(*problem, *inputs, outs).is_ok());
    const auto* want = static_cast<const double*>(expected->host_data());
    // The rows' classes, so that a reference that lost them fails here too.
    for (int64_t j = 0; j < kN; ++j) {
      EXPECT_TRUE(std::isnan(want[1 * kN + j]) && std::isnan(want[2 * kN + j])) << "column " << j;
      EXPECT_EQ(want[3 * kN + j], 0.0) << "column " << j;
      EXPECT_EQ(want[4 * kN + j], 0.0) << "column " << j;
      EXPECT_FALSE(std::isfinite(want[5 * kN + j])) << "column " << j;
    }
    for (const auto& r : testing::runners(*problem, skipped)) {
      SCOPED_TRACE(r.label);
      auto w = make_device_input(*r.device, sig->inputs[0]);
      auto x = make_device_input(*r.device, sig->inputs[1]);
      auto y = empty_tensor(*r.device, DType::f32, {kM, kN});
      ASSERT_TRUE(w.is_ok() && x.is_ok() && y.is_ok());
      ASSERT_TRUE(copy_tensor(*w, (*inputs)[0]).is_ok());
      ASSERT_TRUE(copy_tensor(*x, host_x).is_ok());
      OpCall call{*problem, *r.device, {*w, *x}, {*y}, Tensor{}};
      Status s = ran.time(r.label, text, [&] {
        Status st = r.impl->run(call);
        return st.is_ok() ? r.device->synchronize() : st;
      });
      ASSERT_TRUE(s.is_ok()) << s.message;
      auto got = to_host(*y);
      ASSERT_TRUE(got.is_ok());
      const auto* g = static_cast<const float*>(got->host_data());
      int bad = 0;
      for (int64_t e = 0; e < kM * kN; ++e) {
        const double want_e = want[e], got_e = g[e];
        const bool ok = std::isnan(want_e) ? std::isnan(got_e)
                        : std::isinf(want_e) ? got_e == want_e
                                             : std::fabs(got_e - want_e) <= 0x1p-22 * std::fabs(want_e);
        if (!ok && bad++ < 5)
          ADD_FAILURE() << "y[" << e / kN << ", " << e % kN << "] = " << got_e << ", the reference " << want_e;
      }
      EXPECT_EQ(bad, 0);
    }
  }
  ran.print();
  testing::print_skipped(skipped);
}

TEST(MatmulGgml, BadProblemsNameTheirKey) {
  const OpSpec* spec = Registry::instance().find_op("matmul_ggml");
  ASSERT_NE(spec, nullptr);
  const std::pair<const char*, const char*> cases[] = {
      {"matmul_ggml:q8_0:2x3x33", "K=33"},
      {"matmul_ggml:q4_0:2x3", "MxNxK"},
      {"matmul_ggml:q8_0:2x3x64:zeros=2", "zeros"},
      {"matmul_ggml:q8_0:2x3x64:xscale=-1", "xscale"},
      {"matmul_ggml:q8_0:2x3x64:x.dt=q4_0", "x.dt"},
      {"matmul_ggml:f32:2x3x64", "dtype"},
  };
  for (const auto& [text, key] : cases) {
    SCOPED_TRACE(text);
    auto problem = Problem::parse(text);
    ASSERT_TRUE(problem.is_ok()) << problem.status().message;
    auto sig = spec->signature(*problem);
    ASSERT_FALSE(sig.is_ok());
    EXPECT_EQ(sig.status().code, StatusCode::bad_input);
    EXPECT_NE(sig.status().message.find(key), std::string::npos) << sig.status().message;
  }
}

}  // namespace
}  // namespace dnnb
