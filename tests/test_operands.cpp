// The core pieces every family builds on: per-operand dtype and layout params, problems that
// apply to some dtypes only, the --op list, the dot-product tolerance and the workspace.
#include <gtest/gtest.h>

#include <cmath>

#include "core/check.h"
#include "core/compare.h"
#include "core/host_device.h"
#include "core/registry.h"

namespace dnnb {
namespace {

Problem problem_of(const std::string& text) {
  auto p = Problem::parse(text);
  EXPECT_TRUE(p.is_ok()) << text;
  return *p;
}

Result<Signature> signature_of(const std::string& text) {
  const Problem p = problem_of(text);
  const OpSpec* spec = Registry::instance().find_op(p.op);
  if (!spec) return Status::bad_input("no op " + p.op);
  return spec->signature(p);
}

TEST(OperandParams, DtypeOverrideWithinTheOperandsChoices) {
  auto sig = signature_of("matmul:bf16:4x8x16:y.dt=f32");
  ASSERT_TRUE(sig.is_ok()) << sig.status().to_string();
  EXPECT_EQ(sig->inputs[0].dtype, DType::bf16);
  EXPECT_EQ(sig->inputs[1].dtype, DType::bf16);
  EXPECT_EQ(sig->outputs[0].dtype, DType::f32);
  auto ids = signature_of("embedding:f16:4x10x8:ids.dt=i32");
  ASSERT_TRUE(ids.is_ok()) << ids.status().to_string();
  EXPECT_EQ(ids->inputs[0].dtype, DType::i32);
}

TEST(OperandParams, LayoutOnAnyInput) {
  auto sig = signature_of("matmul:f32:4x8x16:a.layout=padded,b.layout=transposed");
  ASSERT_TRUE(sig.is_ok()) << sig.status().to_string();
  EXPECT_EQ(sig->inputs[0].row_padding, 3);
  EXPECT_TRUE(sig->inputs[0].storage_order.empty());
  EXPECT_EQ(sig->inputs[1].storage_order, (std::vector<int>{1, 0}));
  EXPECT_EQ(sig->inputs[1].shape, (Shape{16, 8}));  // the logical shape is unchanged
}

// The key splits at its last dot: block operands carry their state_dict names, with dots.
TEST(OperandParams, OperandNamesMayHaveDots) {
  Signature sig;
  sig.inputs = {{"model.embed_tokens.weight", DType::f32, {10, 8}}, {"x", DType::f32, {4, 8}}};
  sig.outputs = {{"y", DType::bf16, {4, 10}, {}, 0, {DType::f32}}};
  const Problem p = problem_of("dotted:bf16:4x10x8:model.embed_tokens.weight.layout=padded,x.layout=transposed,y.dt=f32");
  ASSERT_TRUE(apply_operand_params(p, sig).is_ok());
  EXPECT_EQ(sig.inputs[0].row_padding, 3);
  EXPECT_EQ(sig.inputs[1].storage_order, (std::vector<int>{1, 0}));
  EXPECT_EQ(sig.outputs[0].dtype, DType::f32);
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {"dotted:f32:1:model.embed_tokens.layout=padded", "model.embed_tokens.layout"},   // a prefix is no operand
           {"dotted:f32:1:model.embed_tokens.weight.stride=2", "model.embed_tokens.weight.stride"}}) {
    Signature copy = sig;
    Status s = apply_operand_params(problem_of(text), copy);
    EXPECT_EQ(s.code, StatusCode::bad_input) << text;
    EXPECT_NE(s.message.find(key), std::string::npos) << text << ": " << s.message;
  }
  // A registered block takes a layout on its dotted weight the same way.
  auto lm = signature_of(
      "gemma2_lm:f32:1x1x32:ffn=48,head_dim=16,heads=2,kv=1,model.embed_tokens.weight.layout=padded,prompt=1,steps=1,"
      "vocab=40");
  ASSERT_TRUE(lm.is_ok()) << lm.status().to_string();
  int padded = 0;
  for (const TensorSpec& t : lm->inputs) padded += t.row_padding != 0 && t.name == "model.embed_tokens.weight";
  EXPECT_EQ(padded, 1);
}

TEST(OperandParams, MistakesAreBadInputNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"matmul:bf16:4x8x16:y.dt=f16", "y.dt"},           // not one of y's choices
      {"matmul:f32:4x8x16:y.dt=f16", "y.dt"},            // f32 problems have no other output dtype
      {"matmul:bf16:4x8x16:a.dt=f32", "a.dt"},           // a has no choices
      {"matmul:bf16:4x8x16:c.layout=padded", "c.layout"},// no operand c
      {"matmul:bf16:4x8x16:a.layout=diagonal", "a.layout"},
      {"matmul:bf16:4x8x16:y.layout=padded", "y.layout"},// outputs are contiguous
      {"matmul:bf16:4x8x16:a.stride=2", "a.stride"},
      {"matmul:bf16:4x8x16:y.dt=f99", "y.dt"},
      {"dot:f32:7:a.layout=transposed", "a.layout"},     // 1-D: nothing to transpose
      {"softmax:f32:4x4:x.dt=f16", "x.dt"},              // family 1 operands take the rule too
  };
  for (const auto& [text, key] : cases) {
    auto sig = signature_of(text);
    ASSERT_FALSE(sig.is_ok()) << text;
    EXPECT_EQ(sig.status().code, StatusCode::bad_input) << text;
    EXPECT_NE(sig.status().message.find(key), std::string::npos) << text << ": " << sig.status().message;
  }
}

TEST(ProblemText, AppliesOnlyToItsDtypes) {
  const OpSpec* spec = Registry::instance().find_op("matmul");
  ASSERT_NE(spec, nullptr);
  const ProblemText tf32("64x96x128:tf32=1", {DType::f32});
  auto at_f32 = problem_at(*spec, tf32, DType::f32);
  ASSERT_TRUE(at_f32.is_ok());
  ASSERT_TRUE(at_f32->has_value());
  EXPECT_EQ((*at_f32)->to_string(), "matmul:f32:64x96x128:tf32=1");
  auto at_bf16 = problem_at(*spec, tf32, DType::bf16);
  ASSERT_TRUE(at_bf16.is_ok());
  EXPECT_FALSE(at_bf16->has_value());
  auto bad = problem_at(*spec, ProblemText("4x4x4:k=v=w:x"), DType::f32);
  EXPECT_FALSE(bad.is_ok());
  // tf32 on a bf16 problem is a mistake, not a silently ignored flag.
  EXPECT_FALSE(signature_of("matmul:bf16:4x4x4:tf32=1").is_ok());
}

TEST(OpSelection, CommaSeparatedGlobs) {
  EXPECT_TRUE(op_selected("*", "matmul"));
  EXPECT_TRUE(op_selected("matmul,linear", "linear"));
  EXPECT_TRUE(op_selected("soft*,mat*", "matmul"));
  EXPECT_FALSE(op_selected("matmul,linear", "gemv"));
  EXPECT_FALSE(op_selected("", "matmul"));
  EXPECT_FALSE(op_selected(",", "matmul"));
}

TEST(DotProductTolerance, GrowsWithSqrtKAndTheMagnitude) {
  const double m = 1000;
  Tolerance k1 = dot_product_tolerance(DType::f32, {1, 0}, m);
  Tolerance k4096 = dot_product_tolerance(DType::f32, {4096, 0}, m);
  EXPECT_NEAR(k4096.atol / k1.atol, 64.0, 1e-9);
  EXPECT_NEAR(k4096.atol, 8 * 64 * 0x1p-24 * m, 1e-12);
  EXPECT_EQ(k4096.rtol, dtype_epsilon(DType::f32));
  EXPECT_EQ(dot_product_tolerance(DType::bf16, {4096, 0}, m).rtol, dtype_epsilon(DType::bf16));
  // tf32's input rounding: 2 u_in per product, whatever K.
  Tolerance tf32 = dot_product_tolerance(DType::f32, {4096, 0x1p-11}, m);
  EXPECT_NEAR(tf32.atol - k4096.atol, 8 * 2 * 0x1p-11 * m, 1e-9);
}

// An f16 accumulator on the all-positive long-K case is far outside the bound; f32 is inside.
TEST(DotProductTolerance, SeparatesF32FromF16Accumulation) {
  const int64_t k = 8192;
  double exact = 0, f32 = 0, magnitude = 0;
  float acc32 = 0;
  uint16_t acc16 = f32_to_f16(0);
  for (int64_t i = 0; i < k; ++i) {
    const double a = 0.25 + 0.5 * ((i * 37) % 101) / 101.0, b = 0.5 + 0.25 * ((i * 53) % 97) / 97.0;
    const float af = static_cast<float>(a), bf = static_cast<float>(b);
    exact += static_cast<double>(af) * bf;
    magnitude += std::fabs(static_cast<double>(af) * bf);
    acc32 = std::fma(af, bf, acc32);
    acc16 = f32_to_f16(f16_to_f32(acc16) + af * bf);
  }
  f32 = acc32;
  const Tolerance t = dot_product_tolerance(DType::f32, {k, 0}, magnitude);
  EXPECT_LE(std::fabs(f32 - exact), t.atol + t.rtol * std::fabs(exact));
  EXPECT_GT(std::fabs(f16_to_f32(acc16) - exact), 100 * (t.atol + t.rtol * std::fabs(exact)));
}

TEST(Workspace, AllocatedWhenAskedFor) {
  Implementation impl;
  impl.op = "matmul";
  impl.backend = "avx512";
  const Problem p = problem_of("matmul:f32:4x4x4");
  auto none = make_workspace(impl, p, scratch_host());
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none->buffer, nullptr);
  impl.workspace_bytes = [](const Problem&, const DeviceRuntime&) -> Result<size_t> { return size_t{1000}; };
  auto some = make_workspace(impl, p, scratch_host());
  ASSERT_TRUE(some.is_ok()) << some.status().to_string();
  ASSERT_NE(some->buffer, nullptr);
  EXPECT_EQ(some->dtype, DType::u8);
  EXPECT_EQ(some->numel(), 1000);
  impl.workspace_bytes = [](const Problem&, const DeviceRuntime&) -> Result<size_t> {
    return Status::unsupported("too large");
  };
  EXPECT_EQ(make_workspace(impl, p, scratch_host()).status().code, StatusCode::unsupported);
}

}  // namespace
}  // namespace dnnb
