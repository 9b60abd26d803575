// The mlstm_layer block (suites/blocks/mlstm_layer.cpp, xLSTMBlock): it runs on
// avx512 within its allowance of the float64 graph, and when any one node's output is perturbed
// in the workspace after the run, check's hook (explain_mismatch) names that node and its own
// repro line, not an earlier or a later one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/block.h"
#include "core/check.h"
#include "core/device.h"
#include "core/host_device.h"
#include "core/plan.h"
#include "suites/blocks/block_spec.h"

namespace dnnb {
namespace {

void scale_values(Tensor& t, double by) {
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.host_data(), t.dtype, i, load_element(t.host_data(), t.dtype, i) * by);
}

TEST(BlockMlstm, PerturbedNodeIsNamedOnAvx512) {
  // A sequence inside one chunk (f32), and one across chunks of 16 with a tail (bf16, DQK 16,
  // DV 32: at DV 8 the per-head norm's conditioning puts intermediate nodes past their
  // allowance in bf16, docs/blocks.md "mlstm_layer").
  for (const char* text : {"mlstm_layer:f32:1x11x32:ffn=48,heads=2",
                           "mlstm_layer:bf16:2x37x64:chunk=16,ffn=128,heads=2"}) {
    const Problem problem = *Problem::parse(text);
    const OpSpec* spec = Registry::instance().find_op(problem.op);
    ASSERT_NE(spec, nullptr) << text;
    const Implementation* impl = Registry::instance().find_implementation(problem.op, "avx512", "");
    DeviceRuntime* cpu = DeviceSet::instance().first(DeviceKind::cpu);
    if (!impl || !cpu) GTEST_SKIP() << "no avx512 implementation in this build";
    Status supported = impl->supports(problem, *cpu);
    if (!supported.is_ok()) GTEST_SKIP() << supported.message;
    auto sig = spec->signature(problem);
    ASSERT_TRUE(sig.is_ok()) << sig.status().message;
    auto inputs = make_random_inputs(*spec, problem, *sig);
    ASSERT_TRUE(inputs.is_ok());
    auto ws = make_workspace(*impl, problem, *cpu);
    ASSERT_TRUE(ws.is_ok()) << ws.status().message;
    auto y = empty_tensor(*cpu, sig->outputs[0].dtype, sig->outputs[0].shape);
    ASSERT_TRUE(y.is_ok());
    OpCall call{problem, *cpu, *inputs, {*y}, *ws};
    ASSERT_TRUE(impl->run(call).is_ok()) << text;
    EXPECT_NE(spec->explain_mismatch(*impl, call, *inputs).find("every node's output is within its allowance"), std::string::npos)
        << text;

    auto graph = block_graph(problem);
    ASSERT_TRUE(graph.is_ok());
    auto plan = plan_block(*graph, "avx512", *cpu);
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
      // 10 times the node's allowance (at least 2 ulps of bf16): outside it, as a wrong kernel would be.
      scale_values(t, 1 + std::max(10 * allowance.at(out), 0x1p-6));
      const std::string line = spec->explain_mismatch(*impl, call, *inputs);
      EXPECT_NE(line.find("first divergent node: " + node.name + " ("), std::string::npos) << text << ": " << line;
      EXPECT_NE(line.find("dnnblocks check --case '" + node.problem.to_string() + "@avx512"), std::string::npos) << line;
      std::memcpy(t.host_data(), saved.data(), bytes);
    }
  }
}

}  // namespace
}  // namespace dnnb
