// gelu_bwd (both forms) and silu_bwd on special values, on every implementation: dx must be NaN
// exactly where torch's autograd gives NaN (the float64 reference: x = +-inf or NaN, where the
// slope's inf x 0 is NaN, and dy NaN), and within the elementwise bound (docs/conformance.md)
// elsewhere (atol rtol, as for outputs of rms about 1): +-0, subnormal, large x (slope exactly 0 or 1), and x at the slope's zero crossing.
// Random checks never draw these.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

std::vector<double> special_x() {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return {0.0, -0.0, inf, -inf, nan, 1e-40, -1e-40, 1e4, -1e4, 30.0, -30.0, 100.0, -100.0,
          -0.7517915, -1.2784645, 0.5, -0.5, 3.0, -3.0, 8.0, -8.0, 1.0, -1.0, 2.0};
}

void check_op(const std::string& text) {
  auto problem = *Problem::parse(text);
  const int64_t n = problem.shape[1];
  std::vector<double> x = special_x();
  ASSERT_EQ(static_cast<int64_t>(x.size()), n);
  std::vector<double> dy(n, 1.0);
  dy[n - 1] = std::numeric_limits<double>::quiet_NaN();  // x = 2, dy NaN
  dy[n - 2] = -3.0;
  const std::vector<double> xr = testing::rounded_to(problem.dtype, x), dyr = testing::rounded_to(problem.dtype, dy);
  const OpSpec* spec = Registry::instance().find_op(problem.op);
  ASSERT_NE(spec, nullptr);
  // The float64 expectation from the spec's reference on the rounded inputs.
  auto xh = testing::device_tensor(scratch_host(), DType::f64, {1, n}, xr);
  auto dyh = testing::device_tensor(scratch_host(), DType::f64, {1, n}, dyr);
  auto want = empty_tensor(scratch_host(), DType::f64, {1, n});
  ASSERT_TRUE(xh.is_ok() && dyh.is_ok() && want.is_ok());
  std::vector<Tensor> ref_out = {*want};
  ASSERT_TRUE(spec->reference(problem, {*xh, *dyh}, ref_out).is_ok());
  const double eps = problem.dtype == DType::f32 ? std::ldexp(1.0, -23) : problem.dtype == DType::f16 ? std::ldexp(1.0, -10)
                                                                                                     : std::ldexp(1.0, -7);
  const double rtol = problem.dtype == DType::f32 ? 32 * eps : eps;
  std::vector<std::string> skipped;
  const auto runners = testing::runners(problem, skipped);
  ASSERT_FALSE(runners.empty());
  std::string ran;
  for (const auto& r : runners) {
    if (r.impl->backend == "reference") continue;
    ran += " " + r.label;
    SCOPED_TRACE(r.label + " " + text);
    auto xd = testing::device_tensor(*r.device, problem.dtype, {1, n}, xr);
    auto dyd = testing::device_tensor(*r.device, problem.dtype, {1, n}, dyr);
    auto dx = empty_tensor(*r.device, problem.dtype, {1, n});
    auto workspace = make_workspace(*r.impl, problem, *r.device);
    ASSERT_TRUE(xd.is_ok() && dyd.is_ok() && dx.is_ok() && workspace.is_ok());
    OpCall call{problem, *r.device, {*xd, *dyd}, {*dx}, *workspace};
    Status s = r.impl->run(call);
    if (s.is_ok()) s = r.device->synchronize();
    ASSERT_TRUE(s.is_ok()) << s.message;
    auto got = empty_tensor(scratch_host(), problem.dtype, {1, n});
    ASSERT_TRUE(got.is_ok());
    ASSERT_TRUE(copy_tensor(*got, *dx).is_ok());
    for (int64_t i = 0; i < n; ++i) {
      const double e = load_element(want->host_data(), DType::f64, i);
      const double g = load_element(got->host_data(), problem.dtype, i);
      SCOPED_TRACE("x = " + std::to_string(xr[i]) + ", dy = " + std::to_string(dyr[i]));
      EXPECT_EQ(std::isnan(g), std::isnan(e)) << "got " << g << ", expected " << e;
      if (std::isnan(e)) continue;
      EXPECT_LE(std::fabs(g - e), rtol * std::fabs(e) + rtol) << "got " << g << ", expected " << e;
    }
  }
  std::printf("  %s ran:%s\n", text.c_str(), ran.c_str());
  testing::print_skipped(skipped);
}

TEST(ActBwd, SpecialValuesMatchTheReference) {
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    const std::string shape = ":1x" + std::to_string(special_x().size());
    check_op(std::string("gelu_bwd:") + dtype + shape);
    check_op(std::string("gelu_bwd:") + dtype + shape + ":approximate=tanh");
    check_op(std::string("silu_bwd:") + dtype + shape);
  }
}

TEST(ActBwd, ApproximateOtherThanNoneOrTanhIsBadInputNamingIt) {
  const OpSpec* spec = Registry::instance().find_op("gelu_bwd");
  ASSERT_NE(spec, nullptr);
  auto problem = Problem::parse("gelu_bwd:f32:4x4:approximate=erf");
  ASSERT_TRUE(problem.is_ok());
  auto sig = spec->signature(*problem);
  ASSERT_FALSE(sig.is_ok());
  EXPECT_EQ(sig.status().code, StatusCode::bad_input);
  EXPECT_NE(sig.status().message.find("approximate"), std::string::npos) << sig.status().message;
}

}  // namespace
}  // namespace dnnb
