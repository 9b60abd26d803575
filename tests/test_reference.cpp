// The family-1 op specs and their float64 references: hand-computed values on tiny inputs,
// every layout the signatures can ask for, the random-input rules, the reference backend's
// writes through guarded and strided outputs, and that every op is fully registered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <set>

#include "core/host_device.h"
#include "core/registry.h"
#include "reference/fill.h"
#include "reference/register.h"

namespace dnnb {
namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kLn2 = std::numbers::ln2;

Tensor host_tensor(DType dtype, const Shape& shape, const std::vector<double>& values = {}) {
  auto t = empty_tensor(scratch_host(), dtype, shape);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  for (size_t i = 0; i < values.size(); ++i) store_element(t->host_data(), dtype, static_cast<int64_t>(i), values[i]);
  return *t;
}

// Every element of a host tensor in row-major logical order, whatever its strides.
std::vector<double> values_of(const Tensor& t) {
  auto index = row_index(t);
  EXPECT_TRUE(index.is_ok());
  std::vector<double> out;
  for (int64_t r = 0; r < index->rows; ++r)
    for (int64_t c = 0; c < index->cols; ++c)
      out.push_back(load_element(t.buffer->handle, t.dtype,
                                 index->offset + index->row_offset(r) + c * index->col_stride));
  return out;
}

const OpSpec& spec_of(const std::string& op) {
  const OpSpec* spec = Registry::instance().find_op(op);
  if (spec == nullptr) throw std::runtime_error("op " + op + " is not registered");
  return *spec;
}

Problem problem_of(const std::string& text) {
  auto p = Problem::parse(text);
  if (!p) throw std::runtime_error(p.status().to_string());
  return *p;
}

// Runs the op's reference on `inputs` (which must match the signature's shapes and count)
// and returns its f64 outputs.
std::vector<Tensor> run_reference(const std::string& problem_text, const std::vector<Tensor>& inputs) {
  const Problem p = problem_of(problem_text);
  const OpSpec& spec = spec_of(p.op);
  auto sig = spec.signature(p);
  EXPECT_TRUE(sig.is_ok()) << sig.status().to_string();
  EXPECT_EQ(sig->inputs.size(), inputs.size()) << problem_text;
  for (size_t i = 0; i < std::min(inputs.size(), sig->inputs.size()); ++i)
    EXPECT_EQ(inputs[i].shape, sig->inputs[i].shape) << problem_text << " input " << sig->inputs[i].name;
  std::vector<Tensor> outputs;
  for (const auto& out : sig->outputs) outputs.push_back(host_tensor(DType::f64, out.shape));
  const Status st = spec.reference(p, inputs, outputs);
  EXPECT_TRUE(st.is_ok()) << problem_text << ": " << st.to_string();
  return outputs;
}

std::vector<double> reference_values(const std::string& problem_text, const std::vector<Tensor>& inputs) {
  return values_of(run_reference(problem_text, inputs)[0]);
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
    }
  }
}

Tensor f64(const Shape& shape, const std::vector<double>& values) { return host_tensor(DType::f64, shape, values); }

// ---- hand-computed values ----

TEST(Reference, UnaryValues) {
  const Tensor x = f64({4}, {-1, 0, 1, 2});
  expect_near_all(reference_values("relu:f32:4", {x}), {0, 0, 1, 2});
  const double sigmoid_2 = 1 / (1 + std::exp(-2.0));
  expect_near_all(reference_values("sigmoid:f32:4", {x}), {0.2689414213699951, 0.5, 0.7310585786300049, sigmoid_2});
  expect_near_all(reference_values("tanh:f32:4", {x}), {-0.7615941559557649, 0, 0.7615941559557649, std::tanh(2.0)});
  expect_near_all(reference_values("exp:f32:4", {x}), {1 / std::numbers::e, 1, std::numbers::e, std::exp(2.0)});
  expect_near_all(reference_values("silu:f32:4", {x}), {-0.2689414213699951, 0, 0.7310585786300049, 2 * sigmoid_2});
  // torch's F.gelu values in float64.
  expect_near_all(reference_values("gelu:f32:4", {x}), {-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416});
  expect_near_all(reference_values("gelu_tanh:f32:4", {x}),
                  {-0.15880800939172324, 0, 0.8411919906082768, 1.954597694087775});
}

TEST(Reference, ReadsInputsRoundedToTheirDtype) {
  // A bf16 input holds 1/3 rounded to 8 bits of mantissa; relu must return exactly that.
  const Tensor x = host_tensor(DType::bf16, {2}, {1.0 / 3, -1.0 / 3});
  const double third_bf16 = bf16_to_f32(f32_to_bf16(1.0f / 3));
  EXPECT_NE(third_bf16, 1.0 / 3);
  EXPECT_EQ(reference_values("relu:bf16:2", {x}), (std::vector<double>{third_bf16, 0.0}));
}

TEST(Reference, BinaryBroadcasting) {
  const Tensor a = f64({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_near_all(reference_values("add:f32:2x3:b=1x3", {a, f64({1, 3}, {10, 20, 30})}), {11, 22, 33, 14, 25, 36});
  expect_near_all(reference_values("sub:f32:2x3:b=2x1", {a, f64({2, 1}, {1, 2})}), {0, 1, 2, 2, 3, 4});
  expect_near_all(reference_values("mul:f32:2x3:b=3", {a, f64({3}, {2, 0, -1})}), {2, 0, -3, 8, 0, -6});
  expect_near_all(reference_values("div:f32:2x3", {a, f64({2, 3}, {2, 4, 6, 8, 10, -12})}),
                  {0.5, 0.5, 0.5, 0.5, 0.5, -0.5});
  // Both inputs grow: [2,1] op [1,3] -> [2,3].
  const auto outer = run_reference("mul:f32:2x1:b=1x3", {f64({2, 1}, {1, 2}), f64({1, 3}, {1, 10, 100})});
  EXPECT_EQ(outer[0].shape, (Shape{2, 3}));
  expect_near_all(values_of(outer[0]), {1, 10, 100, 2, 20, 200});
  // A middle repeat in 3-D.
  const Tensor a3 = f64({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_near_all(reference_values("add:f32:2x2x2:b=2x1x2", {a3, f64({2, 1, 2}, {10, 20, 30, 40})}),
                  {11, 22, 13, 24, 35, 46, 37, 48});
}

TEST(Reference, Lerp) {
  const Tensor a = f64({2, 2}, {0, 4, 0, 4});
  const Tensor b = f64({2, 2}, {4, 0, 4, 0});
  expect_near_all(reference_values("lerp:f32:2x2", {a, b}), {2, 2, 2, 2});  // default weight 0.5
  expect_near_all(reference_values("lerp:f32:2x2:weight=0.25", {a, b}), {1, 3, 1, 3});
  expect_near_all(reference_values("lerp:f32:2x2:weight=-1", {a, b}), {-4, 8, -4, 8});
  expect_near_all(reference_values("lerp:f32:2x2:w=2x1", {a, b, f64({2, 1}, {0, 1})}), {0, 4, 4, 0});
  expect_near_all(reference_values("lerp:f32:2x2:w=2x2", {a, b, f64({2, 2}, {0, 0.5, 1, 2})}), {0, 2, 4, -4});
}

TEST(Reference, Reductions) {
  const Tensor x = f64({2, 4}, {1, 2, 3, 4, -1, -2, -3, -4});
  expect_near_all(reference_values("sum:f32:2x4", {x}), {10, -10});
  expect_near_all(reference_values("mean:f32:2x4", {x}), {2.5, -2.5});
  expect_near_all(reference_values("max:f32:2x4", {x}), {4, -1});
  expect_near_all(reference_values("norm2:f32:2x4", {x}), {std::sqrt(30.0), std::sqrt(30.0)});
  // A 1-D input reduces to a 0-d output.
  const auto scalar = run_reference("sum:f32:4", {f64({4}, {1, 2, 3, 4})});
  EXPECT_EQ(scalar[0].shape, Shape{});
  expect_near_all(values_of(scalar[0]), {10});
  // amax propagates NaN, and all -inf stays -inf.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto maxes = reference_values("max:f32:2x3", {f64({2, 3}, {1, nan, 3, -kInf, -kInf, -kInf})});
  EXPECT_TRUE(std::isnan(maxes[0]));
  EXPECT_EQ(maxes[1], -kInf);
}

TEST(Reference, Softmax) {
  expect_near_all(reference_values("softmax:f32:2", {f64({2}, {0, kLn2})}), {1.0 / 3, 2.0 / 3});
  // Shift invariance: a large common offset changes nothing.
  expect_near_all(reference_values("softmax:f32:2", {f64({2}, {1000, 1000 + kLn2})}), {1.0 / 3, 2.0 / 3});
  expect_near_all(reference_values("softmax:f32:2:scale=0.6931471805599453", {f64({2}, {0, 1})}), {1.0 / 3, 2.0 / 3});
  // softcap c=2: t = 2 tanh(x/2); x = 2 atanh(ln2/2) makes t = ln 2.
  expect_near_all(reference_values("softmax:f32:2:softcap=2", {f64({2}, {0, 2 * std::atanh(kLn2 / 2)})}),
                  {1.0 / 3, 2.0 / 3});
  // softcap applies before scale: t = ln2, z = 2 ln2 -> [1/5, 4/5].
  expect_near_all(reference_values("softmax:f32:2:scale=2,softcap=2", {f64({2}, {0, 2 * std::atanh(kLn2 / 2)})}),
                  {1.0 / 5, 4.0 / 5});
  // A broadcast row mask with -inf, and a fully masked row that gives 0, not NaN.
  const Tensor zeros = f64({2, 2}, {0, 0, 0, 0});
  expect_near_all(reference_values("softmax:f32:2x2:mask=1x2", {zeros, f64({1, 2}, {0, -kInf})}), {1, 0, 1, 0});
  expect_near_all(reference_values("softmax:f32:2x2:mask=2x2", {zeros, f64({2, 2}, {-kInf, -kInf, 0, 0})}),
                  {0, 0, 0.5, 0.5});
  expect_near_all(reference_values("softmax:f32:2x2:mask=2x1", {zeros, f64({2, 1}, {-kInf, kLn2})}), {0, 0, 0.5, 0.5});
  // 3-D x with a mask broadcast over the leading dim.
  const auto y3 = reference_values("softmax:f32:2x2x2:mask=2x2",
                                   {f64({2, 2, 2}, {0, kLn2, 0, 0, kLn2, 0, 5, 5}), f64({2, 2}, {0, 0, -kInf, 0})});
  expect_near_all(y3, {1.0 / 3, 2.0 / 3, 0, 1, 2.0 / 3, 1.0 / 3, 0, 1});
}

TEST(Reference, LayerNorm) {
  const Tensor x = f64({3}, {1, 2, 3});
  const double a = std::sqrt(1.5);  // (x - 2) / sqrt(2/3)
  expect_near_all(reference_values("layernorm:f32:3:eps=0", {x, f64({3}, {1, 1, 1}), f64({3}, {0, 0, 0})}), {-a, 0, a});
  expect_near_all(reference_values("layernorm:f32:3:eps=0", {x, f64({3}, {2, 2, 2}), f64({3}, {1, 1, 1})}),
                  {1 - 2 * a, 1, 1 + 2 * a});
  // Default eps 1e-5, per-column weight and bias, two rows.
  const double s = 1 / std::sqrt(2.0 / 3 + 1e-5);
  expect_near_all(reference_values("layernorm:f32:2x3",
                                   {f64({2, 3}, {1, 2, 3, 10, 20, 30}), f64({3}, {1, 2, 3}), f64({3}, {0, 1, 0})}),
                  {-s, 1, 3 * s, -std::sqrt(1.5 / (1 + 1.5e-7)), 1, 3 * std::sqrt(1.5 / (1 + 1.5e-7))}, 1e-9);
}

TEST(Reference, RmsNormTorchAndGemmaForms) {
  const Tensor x = f64({2}, {3, 4});
  const Tensor w = f64({2}, {1, 0.5});
  const double rms = std::sqrt(12.5);
  expect_near_all(reference_values("rmsnorm:f32:2:eps=0", {x, w}), {3 / rms, 4 / rms * 0.5});
  expect_near_all(reference_values("rmsnorm:f32:2:eps=0,form=gemma", {x, w}), {3 / rms * 2, 4 / rms * 1.5});
  expect_near_all(reference_values("rmsnorm:f32:2:eps=0,form=torch", {x, w}), {3 / rms, 4 / rms * 0.5});
  const double rms_eps = std::sqrt(12.5 + 1e-6);  // default eps
  expect_near_all(reference_values("rmsnorm:f32:2", {x, w}), {3 / rms_eps, 2 / rms_eps});
  // Gemma weights start at zero: (1 + 0) keeps the normalised values.
  expect_near_all(reference_values("rmsnorm:f32:2:eps=0,form=gemma", {x, f64({2}, {0, 0})}), {3 / rms, 4 / rms});
}

TEST(Reference, CrossEntropyWithAnIgnoredRow) {
  // Row 0: [0, 0], target 0 -> ln 2. Row 1 ignored. Row 2: [ln 3, 0], target 1 -> ln 4.
  const Tensor logits = f64({3, 2}, {0, 0, 7, -7, std::log(3.0), 0});
  const Tensor target = host_tensor(DType::i64, {3}, {0, -100, 1});
  const auto loss = run_reference("cross_entropy:f32:3x2", {logits, target});
  EXPECT_EQ(loss[0].shape, Shape{});
  expect_near_all(values_of(loss[0]), {1.5 * kLn2});
  const auto grad = reference_values("cross_entropy_bwd:f32:3x2", {logits, target});
  // (softmax - onehot) / 2 kept rows.
  expect_near_all(grad, {-0.25, 0.25, 0, 0, 0.375, -0.375});
  for (int r : {0, 2}) EXPECT_NEAR(grad[2 * r] + grad[2 * r + 1], 0, 1e-15) << "row " << r;
  // A custom ignore_index; -100 is then an out-of-range target and is refused.
  const Tensor target_ignore_1 = host_tensor(DType::i64, {3}, {0, 1, 1});
  expect_near_all(reference_values("cross_entropy:f32:3x2:ignore_index=1", {logits, target_ignore_1}), {kLn2});
  auto p = problem_of("cross_entropy:f32:3x2:ignore_index=1");
  std::vector<Tensor> out = {host_tensor(DType::f64, {})};
  const Status bad = spec_of("cross_entropy").reference(p, {logits, target}, out);
  EXPECT_EQ(bad.code, StatusCode::bad_input);
  EXPECT_NE(bad.message.find("target[1]"), std::string::npos) << bad.message;
}

TEST(Reference, CrossEntropyAllIgnored) {
  const Tensor logits = f64({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor target = host_tensor(DType::i64, {2}, {-100, -100});
  EXPECT_TRUE(std::isnan(reference_values("cross_entropy:f32:2x3", {logits, target})[0]));
  expect_near_all(reference_values("cross_entropy_bwd:f32:2x3", {logits, target}), {0, 0, 0, 0, 0, 0});
}

TEST(Reference, CrossEntropyBackwardSumsToZeroPerKeptRow) {
  const Problem p = problem_of("cross_entropy_bwd:f32:16x10:ignore_index=-100");
  const OpSpec& spec = spec_of(p.op);
  std::vector<Tensor> inputs = {host_tensor(DType::f32, {16, 10}), host_tensor(DType::i64, {16})};
  Rng rng(7);
  ASSERT_TRUE(spec.fill_inputs(p, inputs, rng).is_ok());
  const auto grad = reference_values(p.to_string(), inputs);
  const auto targets = values_of(inputs[1]);
  for (int r = 0; r < 16; ++r) {
    double row_sum = 0;
    for (int c = 0; c < 10; ++c) row_sum += grad[r * 10 + c];
    EXPECT_NEAR(row_sum, 0, 1e-15) << "row " << r;
    if (targets[r] == -100) {
      for (int c = 0; c < 10; ++c) EXPECT_EQ(grad[r * 10 + c], 0) << "ignored row " << r;
    } else {
      EXPECT_LT(grad[r * 10 + static_cast<int>(targets[r])], 0) << "target logit of row " << r;
    }
  }
}

// ---- layouts: transposed and padded first inputs, built by hand from the signature ----

// Storage laid out as `spec` asks (dims permuted by storage_order, last storage dim padded by
// row_padding, NaN in the padding and before the view) holding `values`' elements; returns
// the logical view. A reference that ignored strides would read the padding or the wrong
// elements.
Tensor materialize(const TensorSpec& spec, const Tensor& values) {
  const int n = static_cast<int>(spec.shape.size());
  std::vector<int> order = spec.storage_order;
  if (order.empty())
    for (int i = 0; i < n; ++i) order.push_back(i);
  Shape storage(n);
  for (int i = 0; i < n; ++i) storage[i] = spec.shape[order[i]];
  storage[n - 1] += spec.row_padding;
  const int64_t lead = 5;  // elements before the view: a nonzero offset
  Tensor flat = host_tensor(spec.dtype, {lead + shape_numel(storage)});
  for (int64_t i = 0; i < flat.numel(); ++i)
    store_element(flat.host_data(), spec.dtype, i, std::numeric_limits<double>::quiet_NaN());
  Tensor view = flat;
  view.shape = spec.shape;
  view.offset = lead;
  const Shape storage_strides = contiguous_strides(storage);
  view.strides.assign(n, 0);
  for (int i = 0; i < n; ++i) view.strides[order[i]] = storage_strides[i];
  EXPECT_TRUE(copy_tensor(view, values).is_ok());
  return view;
}

// The reference on the signature's layout equals the reference on contiguous inputs, bit
// for bit, and the layout really is not contiguous.
void expect_layout_invariant(const std::string& problem_text) {
  SCOPED_TRACE(problem_text);
  const Problem p = problem_of(problem_text);
  const OpSpec& spec = spec_of(p.op);
  auto sig = spec.signature(p);
  ASSERT_TRUE(sig.is_ok()) << sig.status().to_string();
  std::vector<Tensor> contiguous;
  for (const auto& in : sig->inputs) contiguous.push_back(host_tensor(in.dtype, in.shape));
  Rng rng(p.seed());
  ASSERT_TRUE(spec.fill_inputs(p, contiguous, rng).is_ok());
  std::vector<Tensor> laid_out = contiguous;
  laid_out[0] = materialize(sig->inputs[0], contiguous[0]);
  EXPECT_FALSE(laid_out[0].is_contiguous());
  const auto expected = run_reference(problem_text, contiguous);
  const auto got = run_reference(problem_text, laid_out);
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto e = values_of(expected[i]), g = values_of(got[i]);
    ASSERT_EQ(e.size(), g.size());
    for (size_t k = 0; k < e.size(); ++k) {
      if (std::isnan(e[k]) && std::isnan(g[k])) continue;
      ASSERT_EQ(e[k], g[k]) << "output " << i << " element " << k;
    }
  }
}

TEST(Reference, LayoutsThroughTheSignature) {
  auto t = spec_of("relu").signature(problem_of("relu:f32:3x4x5:layout=transposed"));
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(t->inputs[0].storage_order, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(t->inputs[0].row_padding, 0);
  auto pad = spec_of("relu").signature(problem_of("relu:f32:3x4x5:layout=padded"));
  ASSERT_TRUE(pad.is_ok());
  EXPECT_TRUE(pad->inputs[0].storage_order.empty());
  EXPECT_EQ(pad->inputs[0].row_padding, 3);

  for (const OpSpec& spec : Registry::instance().ops()) {
    if (spec.family != "1") continue;
    const std::string dtype = dtype_name(spec.dtypes.back());
    for (const char* layout : {"transposed", "padded"})
      expect_layout_invariant(spec.name + ":" + dtype + ":5x7:layout=" + layout);
  }
  expect_layout_invariant("add:f32:5x7:b=1x7,layout=transposed");
  expect_layout_invariant("div:bf16:2x5x7:b=5x1,layout=padded");
  expect_layout_invariant("lerp:f16:5x7:layout=transposed,w=5x1");
  expect_layout_invariant("softmax:f32:5x7:layout=transposed,mask=5x7,masked_rows=1,scale=0.5,softcap=3");
  expect_layout_invariant("norm2:f32:2x3x7:layout=transposed");
  expect_layout_invariant("cross_entropy_bwd:bf16:9x7:ignore_index=-100,layout=transposed");
}

// ---- registration ----

// Every registered op, whatever its family: the list comes from the registry, so adding an op
// edits no test. Tensor names are proven by the fixtures, which `check` loads by them.
TEST(Registration, EveryOpIsComplete) {
  ASSERT_FALSE(Registry::instance().ops().empty());
  for (const OpSpec& spec : Registry::instance().ops()) {
    const std::string& name = spec.name;
    SCOPED_TRACE(name);
    EXPECT_FALSE(spec.family.empty());
    EXPECT_FALSE(spec.torch.empty());
    EXPECT_FALSE(spec.dtypes.empty());
    ASSERT_TRUE(spec.signature && spec.flops && spec.fill_inputs && spec.reference);
    if (spec.tolerance == ToleranceClass::dot_product) EXPECT_TRUE(spec.dot_product_error) << "dot_product op without dot_product_error";
    if (spec.steps) EXPECT_TRUE(spec.step_inputs) << "an op of several steps without step_inputs";
    const Implementation* impl = Registry::instance().find_implementation(name, "reference", "");
    ASSERT_NE(impl, nullptr);
    EXPECT_EQ(impl->dtypes, spec.dtypes);

    ASSERT_GE(spec.check_problems.size(), 3u);
    ASSERT_GE(spec.bench_problems.size(), 2u);
    bool has_layout = false;
    for (const auto* list : {&spec.check_problems, &spec.bench_problems}) {
      std::set<std::string> seen;
      for (const ProblemText& text : *list) {
        EXPECT_TRUE(seen.insert(text.text).second) << "listed twice: " << text.text;
        has_layout |= text.text.find("layout=") != std::string::npos;
        int dtypes_applied = 0;
        for (DType dtype : spec.dtypes) {
          auto p = problem_at(spec, text, dtype);
          ASSERT_TRUE(p.is_ok()) << text.text << ": " << p.status().to_string();
          if (!p->has_value()) continue;
          ++dtypes_applied;
          const std::string full = name + ":" + dtype_name(dtype) + ":" + text.text;
          EXPECT_EQ((*p)->to_string(), full) << "parameters must be written sorted so the problem round-trips";
          auto sig = spec.signature(**p);
          EXPECT_TRUE(sig.is_ok()) << full << ": " << sig.status().to_string();
          EXPECT_GE(spec.flops(**p), 0) << full;
          EXPECT_TRUE(minimal_bytes(spec, **p).is_ok()) << full;
        }
        EXPECT_GT(dtypes_applied, 0) << text.text << " applies to none of the op's dtypes";
      }
    }
    EXPECT_TRUE(has_layout) << "no check problem with a non-contiguous operand (layout=)";
  }
}

TEST(Registration, ShapesAndFlops) {
  auto sum0 = spec_of("sum").signature(problem_of("sum:f32:4"));
  ASSERT_TRUE(sum0.is_ok());
  EXPECT_EQ(sum0->outputs[0].shape, Shape{});
  auto outer = spec_of("add").signature(problem_of("add:bf16:64x1:b=1x4096"));
  ASSERT_TRUE(outer.is_ok());
  EXPECT_EQ(outer->inputs[1].shape, (Shape{1, 4096}));
  EXPECT_EQ(outer->outputs[0].shape, (Shape{64, 4096}));
  EXPECT_EQ(outer->outputs[0].dtype, DType::bf16);
  EXPECT_EQ(spec_of("add").flops(problem_of("add:bf16:64x1:b=1x4096")), 64.0 * 4096);
  auto ce = spec_of("cross_entropy").signature(problem_of("cross_entropy:bf16:8x10"));
  ASSERT_TRUE(ce.is_ok());
  EXPECT_EQ(ce->inputs[1].dtype, DType::i64);
  EXPECT_EQ(ce->inputs[1].shape, Shape{8});
  EXPECT_EQ(ce->outputs[0].shape, Shape{});
  EXPECT_EQ(ce->outputs[0].dtype, DType::bf16);
  auto ln = spec_of("layernorm").signature(problem_of("layernorm:f16:2x3x10"));
  ASSERT_TRUE(ln.is_ok());
  EXPECT_EQ(ln->inputs[1].shape, Shape{10});
  EXPECT_EQ(spec_of("softmax").flops(problem_of("softmax:f32:2x4")), 40.0);  // 5 per element
  EXPECT_EQ(spec_of("softmax").flops(problem_of("softmax:f32:2x4:mask=2x4,scale=2,softcap=3")), 80.0);
  EXPECT_EQ(spec_of("relu").flops(problem_of("relu:f32:2x4")), 8.0);
}

TEST(Registration, MalformedProblemsNameTheCulprit) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"add:f32:64x4096:b=3x4096", "b="},       {"add:f32:4x4:b=4xq", "b"},
      {"softmax:f32:4x4:scale=abc", "scale"},  {"softmax:f32:4x4:softcap=-1", "softcap"},
      {"softmax:f32:4x4:mask=3x4", "mask"},    {"softmax:f32:4x4:masked_rows=1", "masked_rows"},
      {"softmax:f32:4x4:mask=4x4,masked_rows=2", "masked_rows"},
      {"relu:f32:4:layout=transposed", "layout"}, {"relu:f32:4x4:layout=diagonal", "layout"},
      {"rmsnorm:f32:4x4:form=llama", "form"},  {"layernorm:f32:4x4:eps=-1", "eps"},
      {"lerp:f32:4x4:w=4x4,weight=0.5", "weight"}, {"lerp:f32:4x4:w=8x4", "w="},
      {"lerp:f32:4x4:w=2x4x4", "w="},          {"cross_entropy:f32:4x4x4", "[N, C]"},
      {"cross_entropy:f16:4x4", "dtype"},      {"cross_entropy_bwd:f32:4x4:ignore_index=x", "ignore_index"},
      {"relu:f32:4x4:typo=1", "typo"},         {"sum:f32:0x4", "empty"},
      {"mean:f8_e4m3fn:4x4", "dtype"},
  };
  for (const auto& [text, culprit] : cases) {
    const Problem p = problem_of(text);
    auto sig = spec_of(p.op).signature(p);
    ASSERT_FALSE(sig.is_ok()) << text;
    EXPECT_EQ(sig.status().code, StatusCode::bad_input) << text;
    EXPECT_NE(sig.status().message.find(culprit), std::string::npos) << text << ": " << sig.status().message;
  }
}

// ---- random inputs ----

std::vector<Tensor> filled(const std::string& problem_text, uint64_t seed) {
  const Problem p = problem_of(problem_text);
  const OpSpec& spec = spec_of(p.op);
  auto sig = spec.signature(p);
  EXPECT_TRUE(sig.is_ok());
  std::vector<Tensor> inputs;
  for (const auto& in : sig->inputs) inputs.push_back(host_tensor(in.dtype, in.shape));
  Rng rng(seed);
  const Status st = spec.fill_inputs(p, inputs, rng);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return inputs;
}

TEST(RandomInputs, NormalAndDeterministic) {
  const auto x = values_of(filled("relu:bf16:64x64", 1)[0]);
  double mean = 0, square = 0;
  for (double v : x) {
    mean += v;
    square += v * v;
    EXPECT_EQ(v, bf16_to_f32(f32_to_bf16(static_cast<float>(v))));
  }
  mean /= x.size();
  EXPECT_NEAR(mean, 0, 0.1);
  EXPECT_NEAR(std::sqrt(square / x.size()), 1, 0.1);
  EXPECT_EQ(values_of(filled("relu:bf16:64x64", 1)[0]), x);
  EXPECT_NE(values_of(filled("relu:bf16:64x64", 2)[0]), x);
  // Integer inputs need their own rule.
  std::vector<Tensor> ints = {host_tensor(DType::i64, {4})};
  Rng rng(1);
  EXPECT_EQ(fill_normal_inputs(problem_of("relu:f32:4"), ints, rng).code, StatusCode::bad_input);
}

TEST(RandomInputs, DivisorsStayAwayFromZero) {
  const auto inputs = filled("div:bf16:64x64", 3);
  const auto a = values_of(inputs[0]), b = values_of(inputs[1]);
  EXPECT_LT(*std::min_element(a.begin(), a.end(), [](double x, double y) { return std::fabs(x) < std::fabs(y); }), 0.5);
  for (double v : b) EXPECT_GE(std::fabs(v), 0.5);
}

TEST(RandomInputs, SoftmaxMasks) {
  const auto mask = values_of(filled("softmax:f16:64x64:mask=64x64", 4)[1]);
  int minus_inf = 0;
  for (double v : mask) {
    EXPECT_TRUE(v == 0 || v == -kInf) << v;
    minus_inf += v == -kInf;
  }
  EXPECT_NEAR(minus_inf / 4096.0, 0.25, 0.05);
  EXPECT_FALSE(std::all_of(mask.begin(), mask.begin() + 64, [](double v) { return v == -kInf; }));
  const auto masked = values_of(filled("softmax:f16:64x64:mask=64x64,masked_rows=1", 4)[1]);
  EXPECT_TRUE(std::all_of(masked.begin(), masked.begin() + 64, [](double v) { return v == -kInf; }));
  EXPECT_FALSE(std::all_of(masked.begin() + 64, masked.begin() + 128, [](double v) { return v == -kInf; }));
}

TEST(RandomInputs, CrossEntropyTargets) {
  const auto with_ignore = values_of(filled("cross_entropy:f32:2048x10:ignore_index=-100", 5)[1]);
  int ignored = 0;
  std::set<double> classes;
  for (double t : with_ignore) {
    if (t == -100) ++ignored;
    else classes.insert(t);
  }
  EXPECT_NEAR(ignored / 2048.0, 0.125, 0.04);
  EXPECT_EQ(classes.size(), 10u);
  EXPECT_GE(*classes.begin(), 0);
  EXPECT_LE(*classes.rbegin(), 9);
  for (double t : values_of(filled("cross_entropy_bwd:bf16:2048x10", 5)[1])) EXPECT_TRUE(t >= 0 && t < 10) << t;
}

// ---- the reference backend ----

struct FakeCudaDevice final : DeviceRuntime {
  DeviceInfo info_{"cuda:0", DeviceKind::cuda, "fake", {}, {}};
  const DeviceInfo& info() const override { return info_; }
  Result<BufferPtr> allocate(size_t) override { return Status::error("fake"); }
  Status upload(Buffer&, size_t, const void*, size_t) override { return Status::error("fake"); }
  Status download(void*, const Buffer&, size_t, size_t) override { return Status::error("fake"); }
  Status synchronize() override { return Status::ok(); }
  void release(Buffer&) noexcept override {}
};

TEST(ReferenceBackend, RunsOnTheHostOnly) {
  const Implementation* impl = Registry::instance().find_implementation("softmax", "reference", "");
  ASSERT_NE(impl, nullptr);
  FakeCudaDevice cuda;
  EXPECT_EQ(impl->supports(problem_of("softmax:f32:4x4"), cuda).code, StatusCode::unsupported);
}

// The output is a view with an offset into a buffer with guard bytes either side, or a
// transposed view: the backend writes every element, rounded to the dtype, and nothing else.
TEST(ReferenceBackend, WritesThroughOutputViews) {
  for (const std::string text : {"softmax:bf16:4x6:scale=0.5", "sum:f16:5", "layernorm:f32:3x5"}) {
    for (bool transposed_output : {false, true}) {
      SCOPED_TRACE(text + (transposed_output ? " transposed output" : ""));
      const Problem p = problem_of(text);
      const OpSpec& spec = spec_of(p.op);
      const Implementation* impl = Registry::instance().find_implementation(p.op, "reference", "");
      ASSERT_NE(impl, nullptr);
      auto sig = spec.signature(p);
      ASSERT_TRUE(sig.is_ok());
      std::vector<Tensor> inputs;
      for (const auto& in : sig->inputs) inputs.push_back(host_tensor(in.dtype, in.shape));
      Rng rng(p.seed());
      ASSERT_TRUE(spec.fill_inputs(p, inputs, rng).is_ok());
      const auto expected = values_of(run_reference(text, inputs)[0]);

      const TensorSpec& out = sig->outputs[0];
      const int64_t guard = 16, count = shape_numel(out.shape);
      Tensor buffer = host_tensor(out.dtype, {count + 2 * guard});
      std::memset(buffer.host_data(), 0xA5, storage_bytes(buffer.dtype, buffer.numel()));
      Tensor view = buffer;
      view.shape = out.shape;
      view.strides = contiguous_strides(out.shape);
      view.offset = guard;
      if (transposed_output && out.shape.size() == 2) {
        view.shape = {out.shape[1], out.shape[0]};
        view.strides = contiguous_strides(view.shape);
        auto t = view.transpose(0, 1);
        ASSERT_TRUE(t.is_ok());
        view = *t;
      }
      OpCall call{p, scratch_host(), inputs, {view}};
      ASSERT_TRUE(impl->run(call).is_ok());
      const auto got = values_of(view);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        Tensor one = host_tensor(out.dtype, {1}, {expected[i]});  // expected rounded to the dtype
        EXPECT_EQ(got[i], values_of(one)[0]) << "element " << i;
      }
      const auto* bytes = static_cast<const uint8_t*>(buffer.buffer->handle);
      const size_t guard_bytes = storage_bytes(buffer.dtype, guard);
      const size_t output_end = storage_bytes(buffer.dtype, guard + count);
      for (size_t i = 0; i < guard_bytes; ++i) {
        EXPECT_EQ(bytes[i], 0xA5) << "guard byte " << i << " before the output";
        EXPECT_EQ(bytes[output_end + i], 0xA5) << "guard byte " << i << " after the output";
      }
    }
  }
}

}  // namespace
}  // namespace dnnb
