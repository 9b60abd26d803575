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
#include "tests/block_test_util.h"

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

TEST(BlockDecode, PerturbedNodeIsNamedOnAvx512) {
  for (const char* text : {kProblem, "llama_decode:f32:2x1x64:ctx=9,ffn=80,heads=2,kv=1,lens=full,steps=1"}) {
    block_test::expect_perturbed_node_named(text);
    if (HasFatalFailure() || IsSkipped()) return;  // as a failed ASSERT or a skip in the test's own body
  }
}

}  // namespace
}  // namespace dnnb
