// linear_bwd on every implementation: exact gradients where f32 sums are exact (small integers
// in x, w and dy: any summation order gives the same value, so a product dropped, taken twice or
// read from the wrong row or column shows as a wrong value, not as rounding), on a 3-D x and on
// sizes off every tile; the same bits on a second run over random inputs; and the spec's bad
// input (shape, bias, a transposed 3-D operand) named in the message, with each output's
// reduction length for its tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "tests/backend_runners.h"

namespace dnnb {
namespace {

struct Grads {
  std::vector<double> dx, dw, db;
};

// One run's outputs, as doubles, after filling them with NaN.
Result<Grads> run_grads(const testing::Runner& r, const Problem& problem, const Shape& x_shape, const Shape& dy_shape,
                        const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& dy) {
  const int64_t n = problem.shape[problem.shape.size() - 2], k = problem.shape.back();
  const bool bias = problem.get("bias") == "1";
  const DType dt = problem.dtype;
  auto xd = testing::device_tensor(*r.device, dt, x_shape, x);
  if (!xd) return xd.status();
  auto wd = testing::device_tensor(*r.device, dt, {n, k}, w);
  if (!wd) return wd.status();
  auto dyd = testing::device_tensor(*r.device, dt, dy_shape, dy);
  if (!dyd) return dyd.status();
  std::vector<Tensor> outs;
  for (const Shape& s : {x_shape, Shape{n, k}, Shape{n}}) {
    if (outs.size() == 2 && !bias) break;
    auto t = testing::device_tensor(*r.device, dt, s, std::vector<double>(shape_numel(s), std::nan("")));
    if (!t) return t.status();
    outs.push_back(*t);
  }
  auto workspace = make_workspace(*r.impl, problem, *r.device);
  if (!workspace) return workspace.status();
  OpCall call{problem, *r.device, {*xd, *wd, *dyd}, outs, *workspace};
  DNNB_TRY(r.impl->run(call));
  DNNB_TRY(r.device->synchronize());
  Grads g;
  std::vector<double>* dest[3] = {&g.dx, &g.dw, &g.db};
  for (size_t i = 0; i < outs.size(); ++i) {
    auto host = to_host(outs[i]);
    if (!host) return host.status();
    for (int64_t e = 0; e < host->numel(); ++e) dest[i]->push_back(load_element(host->host_data(), dt, e));
  }
  return g;
}

int mismatches(const std::vector<double>& got, const std::vector<double>& want, const char* name) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(got.at(i) == want[i]) && ++bad <= 3)
      ADD_FAILURE() << name << "[" << i << "] = " << got[i] << ", expected " << want[i];
  return bad;
}

TEST(LinearBwd, ExactGradientsOnEveryBackend) {
  for (const char* text : {"linear_bwd:f32:2x37x19x45:bias=1", "linear_bwd:bf16:300x70x33:bias=1",
                           "linear_bwd:f16:64x128x72", "linear_bwd:bf16:1x65x17:bias=1"}) {
    auto problem = *Problem::parse(text);
    const auto& s = problem.shape;
    const bool batched = s.size() == 4;
    const int64_t b = batched ? s[0] : 1, m = s[s.size() - 3], n = s[s.size() - 2], k = s.back();
    const int64_t rows = b * m;
    const Shape x_shape = batched ? Shape{b, m, k} : Shape{m, k};
    const Shape dy_shape = batched ? Shape{b, m, n} : Shape{m, n};
    Rng rng(29);
    // |values| <= 4: every product and partial sum is an integer below 2^24, exact in f32.
    auto draw = [&](int64_t count) {
      std::vector<double> v(count);
      for (double& e : v) e = static_cast<double>(rng.integer(-4, 5));
      return v;
    };
    const std::vector<double> x = draw(rows * k), w = draw(n * k), dy = draw(rows * n);
    std::vector<double> dx(rows * k, 0.0), dw(n * k, 0.0), db(n, 0.0);
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t o = 0; o < n; ++o) {
        const double g = dy[t * n + o];
        db[o] += g;
        for (int64_t c = 0; c < k; ++c) {
          dx[t * k + c] += g * w[o * k + c];
          dw[o * k + c] += g * x[t * k + c];
        }
      }
    std::vector<std::string> skipped;
    const auto runners = testing::runners(problem, skipped);
    for (const auto& r : runners) {
      SCOPED_TRACE(r.label + " " + text);
      auto got = run_grads(r, problem, x_shape, dy_shape, x, w, dy);
      ASSERT_TRUE(got.is_ok()) << got.status().message;
      EXPECT_EQ(mismatches(got->dx, testing::rounded_to(problem.dtype, dx), "dx"), 0);
      EXPECT_EQ(mismatches(got->dw, testing::rounded_to(problem.dtype, dw), "dw"), 0);
      if (problem.get("bias") == "1") EXPECT_EQ(mismatches(got->db, testing::rounded_to(problem.dtype, db), "db"), 0);
    }
    testing::print_skipped(skipped);
  }
}

TEST(LinearBwd, SameBitsOnASecondRun) {
  auto problem = *Problem::parse("linear_bwd:bf16:2x300x96x130:bias=1");
  const Shape x_shape{2, 300, 130}, dy_shape{2, 300, 96};
  Rng rng(7);
  auto draw = [&](int64_t count) {
    std::vector<double> v(count);
    for (double& e : v) e = rng.normal();
    return v;
  };
  const std::vector<double> x = draw(600 * 130), w = draw(96 * 130), dy = draw(600 * 96);
  std::vector<std::string> skipped;
  for (const auto& r : testing::runners(problem, skipped)) {
    SCOPED_TRACE(r.label);
    auto first = run_grads(r, problem, x_shape, dy_shape, x, w, dy);
    ASSERT_TRUE(first.is_ok()) << first.status().message;
    auto second = run_grads(r, problem, x_shape, dy_shape, x, w, dy);
    ASSERT_TRUE(second.is_ok()) << second.status().message;
    EXPECT_EQ(mismatches(second->dx, first->dx, "dx"), 0);
    EXPECT_EQ(mismatches(second->dw, first->dw, "dw"), 0);
    EXPECT_EQ(mismatches(second->db, first->db, "db"), 0);
  }
  testing::print_skipped(skipped);
}

TEST(LinearBwd, BadInputNamesTheCulprit) {
  const OpSpec* spec = Registry::instance().find_op("linear_bwd");
  ASSERT_NE(spec, nullptr);
  const std::pair<const char*, const char*> cases[] = {
      {"linear_bwd:f32:8x16", "at least 3 dims"},
      {"linear_bwd:f32:2x2x8x16x32", "MxNxK"},
      {"linear_bwd:f32:8x16x32:bias=2", "bias"},
      {"linear_bwd:f32:2x8x16x32:x.layout=transposed", "x.layout"},
      {"linear_bwd:f32:2x8x16x32:dy.layout=transposed", "dy.layout"},
      {"linear_bwd:f32:8x16x32:bogus=1", "bogus"},
      {"linear_bwd:i8:8x16x32", "dtype"},
  };
  for (const auto& [text, culprit] : cases) {
    auto problem = Problem::parse(text);
    ASSERT_TRUE(problem.is_ok()) << text;
    auto sig = spec->signature(*problem);
    ASSERT_FALSE(sig.is_ok()) << text;
    EXPECT_NE(sig.status().message.find(culprit), std::string::npos) << text << ": " << sig.status().message;
  }
}

TEST(LinearBwd, ReductionLengthsAndFlops) {
  const OpSpec* spec = Registry::instance().find_op("linear_bwd");
  ASSERT_NE(spec, nullptr);
  auto problem = *Problem::parse("linear_bwd:bf16:3x100x40x60:bias=1");
  auto sig = spec->signature(problem);
  ASSERT_TRUE(sig.is_ok()) << sig.status().message;
  ASSERT_EQ(sig->outputs.size(), 3u);
  EXPECT_EQ(sig->outputs[0].name, "dx");
  EXPECT_EQ(spec->dot_product_error(problem, 0).length, 40);   // dx sums over the N outputs
  EXPECT_EQ(spec->dot_product_error(problem, 1).length, 300);  // dw over the B M tokens
  EXPECT_EQ(spec->dot_product_error(problem, 2).length, 300);  // db too
  EXPECT_DOUBLE_EQ(spec->flops(problem), 4.0 * 300 * 40 * 60 + 300 * 40);
}

}  // namespace
}  // namespace dnnb
