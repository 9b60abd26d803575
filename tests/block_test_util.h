// What the block tests share: a node's outputs perturbed in a plan, and the check that, for a
// block problem run on avx512, check's hook (explain_mismatch) finds every node within its
// allowance, and when any one node's output is perturbed in the workspace after the run, names
// that node and its own repro line, not an earlier or a later one.
#pragma once
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

namespace dnnb::block_test {

inline void scale_values(Tensor& t, double by) {
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.host_data(), t.dtype, i, load_element(t.host_data(), t.dtype, i) * by);
}

// Makes node `perturbed` of `plan` run its implementation and then scale its outputs by 1 + `by`
// (a kernel off by that much); `wrapped`, which the plan then points to, must outlive its runs.
inline void perturb_node(BlockPlan& plan, int perturbed, double by, Implementation& wrapped) {
  const Implementation* real = plan.nodes[perturbed].impl;
  wrapped = *real;
  wrapped.run = [real, by](OpCall& call) -> Status {
    DNNB_TRY(real->run(call));
    for (Tensor& out : call.outputs) scale_values(out, 1 + by);
    return Status::ok();
  };
  plan.nodes[perturbed].impl = &wrapped;
}

// Runs the block problem `text` once on avx512 (skipping the test where this build or CPU has no
// avx512 implementation of it), then perturbs each node's output in turn by 10 times its
// allowance (at least 2 ulps of bf16: outside it, as a wrong kernel would be) and expects the
// hook to name that node. A block with state (caches updated in place) takes the same path: the
// run and the hook's float64 graph both store the step's token into them, the same values
// whichever runs first.
inline void expect_perturbed_node_named(const char* text) {
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
    scale_values(t, 1 + std::max(10 * allowance.at(out), 0x1p-6));
    const std::string line = spec->explain_mismatch(*impl, call, *inputs);
    EXPECT_NE(line.find("first divergent node: " + node.name + " ("), std::string::npos) << text << ": " << line;
    EXPECT_NE(line.find("dnnblocks check --case '" + node.problem.to_string() + "@avx512"), std::string::npos) << line;
    std::memcpy(t.host_data(), saved.data(), bytes);
  }
}

}  // namespace dnnb::block_test
