// layernorm_bwd and rmsnorm_bwd: the float64 reference is the gradient of the forward reference
// (central differences of sum(y dy) in x and w, b, with the statistics recomputed exactly, as
// fill_norm_bwd_inputs stores them, on inputs in float64 so nothing is rounded), for both
// rmsnorm forms; and the ops' bad input names the culprit.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/host_device.h"
#include "core/problem.h"
#include "core/registry.h"
#include "core/rng.h"
#include "reference/norm_bwd.h"
#include "reference/reference.h"

namespace dnnb {
namespace {

Tensor host_f64(const Shape& shape) {
  auto t = empty_tensor(scratch_host(), DType::f64, shape);
  EXPECT_TRUE(t.is_ok()) << t.status().message;
  return *t;
}

double* data(Tensor& t) { return static_cast<double*>(t.host_data()); }

// sum(y dy) of the forward reference at x, w (and b = 0 for layernorm).
double forward_dot(const Problem& forward, bool centered, const Tensor& x, const Tensor& w, Tensor& dy) {
  std::vector<Tensor> inputs = {x, w};
  Tensor b = host_f64(w.shape);
  for (int64_t i = 0; i < b.numel(); ++i) data(b)[i] = 0;
  if (centered) inputs.push_back(b);
  std::vector<Tensor> outputs = {host_f64(x.shape)};
  const Status s = centered ? reference::layernorm(forward, inputs, outputs) : reference::rmsnorm(forward, inputs, outputs);
  EXPECT_TRUE(s.is_ok()) << s.message;
  double total = 0;
  for (int64_t i = 0; i < x.numel(); ++i) total += data(outputs[0])[i] * data(dy)[i];
  return total;
}

void expect_gradient(const std::string& backward_text, const std::string& forward_text) {
  auto problem = Problem::parse(backward_text);
  ASSERT_TRUE(problem.is_ok()) << problem.status().message;
  auto forward = Problem::parse(forward_text);
  ASSERT_TRUE(forward.is_ok()) << forward.status().message;
  const OpSpec* spec = Registry::instance().find_op(problem->op);
  ASSERT_NE(spec, nullptr);
  const bool centered = problem->op == "layernorm_bwd";
  auto sig = spec->signature(*problem);
  ASSERT_TRUE(sig.is_ok()) << sig.status().message;
  // Every operand in float64, so the statistics are exact and nothing is rounded.
  std::vector<Tensor> inputs;
  for (const auto& in : sig->inputs) inputs.push_back(host_f64(in.shape));
  Rng rng(0x5eed);
  ASSERT_TRUE(reference::fill_norm_bwd_inputs(*problem, inputs, rng).is_ok());
  std::vector<Tensor> outputs;
  for (const auto& out : sig->outputs) outputs.push_back(host_f64(out.shape));
  ASSERT_TRUE(spec->reference(*problem, inputs, outputs).is_ok());

  Tensor& x = inputs[0];
  Tensor& w = inputs[1];
  Tensor& dy = inputs[2];
  constexpr double kStep = 1e-6;
  auto central = [&](double& v) {
    const double saved = v;
    v = saved + kStep;
    const double up = forward_dot(*forward, centered, x, w, dy);
    v = saved - kStep;
    const double down = forward_dot(*forward, centered, x, w, dy);
    v = saved;
    return (up - down) / (2 * kStep);
  };
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_NEAR(data(outputs[0])[i], central(data(x)[i]), 1e-6) << backward_text << " dx[" << i << "]";
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_NEAR(data(outputs[1])[i], central(data(w)[i]), 1e-6) << backward_text << " dw[" << i << "]";
  if (centered) {  // db = sum over rows of dy
    for (int64_t c = 0; c < w.numel(); ++c) {
      double sum = 0;
      for (int64_t r = 0; r < x.numel() / w.numel(); ++r) sum += data(dy)[r * w.numel() + c];
      EXPECT_NEAR(data(outputs[2])[c], sum, 1e-12) << backward_text << " db[" << c << "]";
    }
  }
}

TEST(NormBwdReference, IsTheForwardsGradient) {
  expect_gradient("layernorm_bwd:f32:3x7", "layernorm:f32:3x7");
  expect_gradient("layernorm_bwd:f32:2x5:eps=0.5", "layernorm:f32:2x5:eps=0.5");
  expect_gradient("rmsnorm_bwd:f32:3x7", "rmsnorm:f32:3x7");
  expect_gradient("rmsnorm_bwd:f32:2x5:form=gemma,eps=0.5", "rmsnorm:f32:2x5:form=gemma,eps=0.5");
}

TEST(NormBwdSpec, BadInputNamesTheKey) {
  const OpSpec* rms = Registry::instance().find_op("rmsnorm_bwd");
  const OpSpec* ln = Registry::instance().find_op("layernorm_bwd");
  ASSERT_NE(rms, nullptr);
  ASSERT_NE(ln, nullptr);
  auto form = rms->signature(*Problem::parse("rmsnorm_bwd:f32:4x8:form=llama"));
  EXPECT_EQ(form.status().code, StatusCode::bad_input);
  EXPECT_NE(form.status().message.find("form"), std::string::npos) << form.status().message;
  auto unknown = ln->signature(*Problem::parse("layernorm_bwd:f32:4x8:form=gemma"));
  EXPECT_EQ(unknown.status().code, StatusCode::bad_input);
  EXPECT_NE(unknown.status().message.find("form"), std::string::npos) << unknown.status().message;
  auto eps = ln->signature(*Problem::parse("layernorm_bwd:f32:4x8:eps=-1"));
  EXPECT_EQ(eps.status().code, StatusCode::bad_input);
  EXPECT_NE(eps.status().message.find("eps"), std::string::npos) << eps.status().message;
}

}  // namespace
}  // namespace dnnb
