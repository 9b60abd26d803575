// llama_decode (suites/blocks/llama_decode.cpp): a block with state. On avx512, check runs its
// decode steps, compares every step's y and both caches after the last within the block's state
// bound (OpSpec::state_bounds: the stored value's allowance plus one rounding), which a wrong
// store exceeds; and a perturbed node is the one check's hook names, as for the other blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/block.h"
#include "core/check.h"
#include "core/compare.h"
#include "core/device.h"
#include "core/host_device.h"
#include "core/plan.h"
#include "suites/blocks/block_spec.h"

namespace dnnb {
namespace {

constexpr const char* kProblem = "llama_decode:bf16:3x1x64:ctx=24,ffn=96,heads=4,kv=2";

struct DecodeSetup {
  const OpSpec* spec = nullptr;
  const Implementation* impl = nullptr;
  DeviceRuntime* cpu = nullptr;
};

DecodeSetup decode_setup(const Problem& problem) {
  DecodeSetup s;
  s.spec = Registry::instance().find_op(problem.op);
  s.impl = Registry::instance().find_implementation(problem.op, "avx512", "");
  s.cpu = DeviceSet::instance().first(DeviceKind::cpu);
  return s;
}

PlannedCase planned(const DecodeSetup& s, const Implementation& impl, const std::string& problem) {
  PlannedCase pc;
  pc.id = *CaseId::parse(problem + "@avx512:0");
  pc.spec = s.spec;
  pc.impl = &impl;
  pc.device = s.cpu;
  return pc;
}

TEST(BlockDecode, StepsAndCachesAreComparedWithinTheStateBound) {
  const Problem problem = *Problem::parse(kProblem);
  const DecodeSetup s = decode_setup(problem);
  ASSERT_NE(s.spec, nullptr);
  if (!s.impl || !s.cpu || !s.impl->supports(problem, *s.cpu).is_ok()) GTEST_SKIP() << "no avx512 llama_decode here";
  FixtureManifest manifest;
  CheckOptions options;
  CaseResult r = run_case(planned(s, *s.impl, kProblem), manifest, options);
  ASSERT_EQ(r.status, StatusCode::ok) << r.reason;
  ASSERT_EQ(r.outputs.size(), 5u);  // y, y@1, y@2, then the two caches
  EXPECT_EQ(r.outputs[2].name, "y@2");
  EXPECT_NE(r.outputs[3].name.find("k_cache (state after step 2)"), std::string::npos) << r.outputs[3].name;
  EXPECT_NE(r.outputs[4].name.find("v_cache (state"), std::string::npos) << r.outputs[4].name;
  for (size_t i : {3u, 4u}) {
    EXPECT_EQ(r.outputs[i].tolerance.rtol, dtype_epsilon(DType::bf16));
    // The stored value's allowance (rmsnorm, gemv, rope: about 4 eps of bf16) x its rms.
    EXPECT_GT(r.outputs[i].tolerance.atol, 0.0);
    EXPECT_LT(r.outputs[i].tolerance.atol, 0.1);
  }

  // A store off by 0.25 at one written position (past the bound) fails on that cache.
  Implementation wrong = *s.impl;
  wrong.variant = "test_wrong_store";
  const Implementation real = *s.impl;
  wrong.run = [real](OpCall& call) {
    Status ran = real.run(call);
    if (!ran.is_ok()) return ran;
    Tensor& cache = call.inputs[2];
    const int32_t pos = *static_cast<const int32_t*>(call.inputs[1].host_data());
    const int64_t d = cache.shape[3], at = static_cast<int64_t>(pos) * d;  // sequence 0, kv head 0
    store_element(cache.host_data(), cache.dtype, at, load_element(cache.host_data(), cache.dtype, at) + 0.25);
    return Status::ok();
  };
  CaseResult bad = run_case(planned(s, wrong, kProblem), manifest, options);
  EXPECT_EQ(bad.status, StatusCode::mismatch);
  ASSERT_EQ(bad.outputs.size(), 5u);
  EXPECT_NE(bad.outputs[3].name.find("k_cache (state"), std::string::npos);
  EXPECT_FALSE(metrics_pass(bad.outputs[3].ours, nullptr)) << bad.reason;
  EXPECT_TRUE(metrics_pass(bad.outputs[4].ours, nullptr)) << bad.reason;
}

void scale_values(Tensor& t, double by) {
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.host_data(), t.dtype, i, load_element(t.host_data(), t.dtype, i) * by);
}

TEST(BlockDecode, PerturbedNodeIsNamedOnAvx512) {
  for (const char* text : {kProblem, "llama_decode:f32:2x1x64:ctx=9,ffn=80,heads=2,kv=1,lens=full,steps=1"}) {
    const Problem problem = *Problem::parse(text);
    const DecodeSetup s = decode_setup(problem);
    ASSERT_NE(s.spec, nullptr);
    if (!s.impl || !s.cpu || !s.impl->supports(problem, *s.cpu).is_ok()) GTEST_SKIP() << "no avx512 llama_decode here";
    auto sig = s.spec->signature(problem);
    ASSERT_TRUE(sig.is_ok()) << sig.status().message;
    auto inputs = make_random_inputs(*s.spec, problem, *sig);
    ASSERT_TRUE(inputs.is_ok());
    auto ws = make_workspace(*s.impl, problem, *s.cpu);
    ASSERT_TRUE(ws.is_ok()) << ws.status().message;
    auto y = empty_tensor(*s.cpu, sig->outputs[0].dtype, sig->outputs[0].shape);
    ASSERT_TRUE(y.is_ok());
    // The caches are updated in place: the run and the hook's float64 graph both store the step's
    // token into them, the same values whichever runs first.
    OpCall call{problem, *s.cpu, *inputs, {*y}, *ws};
    ASSERT_TRUE(s.impl->run(call).is_ok()) << text;
    EXPECT_NE(s.spec->explain_mismatch(*s.impl, call, *inputs).find("every node's output is within its allowance"),
              std::string::npos)
        << text;

    auto graph = block_graph(problem);
    ASSERT_TRUE(graph.is_ok());
    auto plan = plan_block(*graph, "avx512", *s.cpu);
    ASSERT_TRUE(plan.is_ok());
    auto values = bind_block(*graph, *plan, call);
    ASSERT_TRUE(values.is_ok());
    const auto allowance = value_allowances(*graph);
    for (const BlockNode& node : graph->nodes) {
      const std::string& out = node.outputs[0];
      Tensor& t = values->at(out);
      const size_t bytes = storage_bytes(t.dtype, t.numel());
      std::vector<unsigned char> saved(bytes);
      ASSERT_TRUE(t.is_contiguous()) << out;
      std::memcpy(saved.data(), t.host_data(), bytes);
      scale_values(t, 1 + std::max(10 * allowance.at(out), 0x1p-6));
      const std::string line = s.spec->explain_mismatch(*s.impl, call, *inputs);
      EXPECT_NE(line.find("first divergent node: " + node.name + " ("), std::string::npos) << text << ": " << line;
      EXPECT_NE(line.find("dnnblocks check --case '" + node.problem.to_string() + "@avx512"), std::string::npos) << line;
      std::memcpy(t.host_data(), saved.data(), bytes);
    }
  }
}

}  // namespace
}  // namespace dnnb
