// What the block tests share: a graph run on the host with a node's outputs perturbed, and the
// check that, for a block problem run on avx512, check's hook (explain_mismatch) finds every
// node within its allowance, and when any one node's output is perturbed in the workspace after
// the run, names that node and its own repro line, not an earlier or a later one.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
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

// Every value of `graph` (one output or several), on the host, run by the reference
// implementation of each node's op (rounding each node's output into the block dtype, as a
// backend's kernels do), node `perturbed` (if >= 0) scaling its outputs by 1 + `by` after it runs.
inline std::map<std::string, Tensor> run_on_host(const BlockGraph& graph, const Problem& problem,
                                                 const std::vector<Tensor>& inputs, int perturbed, double by) {
  HostDevice& host = scratch_host();
  auto plan = plan_block(graph, "reference", host);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message;
  Implementation wrapped;
  if (perturbed >= 0) block_test::perturb_node(*plan, perturbed, by, wrapped);
  auto ws = empty_tensor(host, DType::u8, {static_cast<int64_t>(std::max<size_t>(plan->workspace_bytes, 1))});
  EXPECT_TRUE(ws.is_ok());
  std::vector<Tensor> outputs;
  for (const std::string& name : graph.outputs) {
    const BlockValue& v = graph.values.at(name);
    auto made = empty_tensor(host, v.dtype, v.shape);
    EXPECT_TRUE(made.is_ok());
    outputs.push_back(*made);
  }
  OpCall call{problem, host, inputs, outputs, *ws};
  Status ran = run_block(graph, *plan, call);
  EXPECT_TRUE(ran.is_ok()) << ran.message;
  auto values = bind_block(graph, *plan, call);
  EXPECT_TRUE(values.is_ok());
  std::map<std::string, Tensor> host_values;
  for (auto& [name, t] : *values) host_values[name] = *to_host(t);
  return host_values;
}

// A block problem run once on avx512: the call (its inputs, y, and the workspace that holds
// every node's output) and the graph's values bound to that workspace.
struct Avx512BlockRun {
  Problem problem;
  const OpSpec* spec = nullptr;
  const Implementation* impl = nullptr;
  DeviceRuntime* cpu = nullptr;
  std::vector<Tensor> inputs;
  std::unique_ptr<OpCall> call;
  BlockGraph graph;
  std::map<std::string, Tensor> values;
};

// Runs the block problem `text` once on avx512 into `r` (skipping the test where this build or
// CPU has no avx512 implementation of it) and expects check's hook to find every node within its
// allowance. A block with state (caches updated in place) takes the same path: the run and the
// hook's float64 graph both store the step's token into them, the same values whichever runs
// first. The caller returns on HasFatalFailure() or IsSkipped().
inline void run_block_on_avx512(const char* text, Avx512BlockRun& r) {
  r.problem = *Problem::parse(text);
  r.spec = Registry::instance().find_op(r.problem.op);
  ASSERT_NE(r.spec, nullptr) << text;
  r.impl = Registry::instance().find_implementation(r.problem.op, "avx512", "");
  r.cpu = DeviceSet::instance().first(DeviceKind::cpu);
  if (!r.impl || !r.cpu) GTEST_SKIP() << "no avx512 implementation in this build";
  Status supported = r.impl->supports(r.problem, *r.cpu);
  if (!supported.is_ok()) GTEST_SKIP() << supported.message;
  auto sig = r.spec->signature(r.problem);
  ASSERT_TRUE(sig.is_ok()) << sig.status().message;
  auto inputs = make_random_inputs(*r.spec, r.problem, *sig);
  ASSERT_TRUE(inputs.is_ok());
  r.inputs = *inputs;
  auto ws = make_workspace(*r.impl, r.problem, *r.cpu);
  ASSERT_TRUE(ws.is_ok()) << ws.status().message;
  auto y = empty_tensor(*r.cpu, sig->outputs[0].dtype, sig->outputs[0].shape);
  ASSERT_TRUE(y.is_ok());
  r.call = std::make_unique<OpCall>(OpCall{r.problem, *r.cpu, r.inputs, {*y}, *ws});
  ASSERT_TRUE(r.impl->run(*r.call).is_ok()) << text;
  EXPECT_NE(r.spec->explain_mismatch(*r.impl, *r.call, r.inputs).find("every node's output is within its allowance"),
            std::string::npos)
      << text;

  auto graph = block_graph(r.problem);
  ASSERT_TRUE(graph.is_ok());
  r.graph = *graph;
  auto plan = plan_block(r.graph, "avx512", *r.cpu);
  ASSERT_TRUE(plan.is_ok());
  auto values = bind_block(r.graph, *plan, *r.call);
  ASSERT_TRUE(values.is_ok());
  r.values = *values;
}

// Runs `text` as run_block_on_avx512, then perturbs each node's output in turn by 10 times its
// allowance (at least 2 ulps of bf16: outside it, as a wrong kernel would be) and expects the
// hook to name that node.
inline void expect_perturbed_node_named(const char* text) {
  Avx512BlockRun r;
  run_block_on_avx512(text, r);
  if (::testing::Test::HasFatalFailure() || ::testing::Test::IsSkipped()) return;
  const auto allowance = value_allowances(r.graph);
  for (const BlockNode& node : r.graph.nodes) {
    const std::string& out = node.outputs[0];
    Tensor& t = r.values.at(out);
    const size_t bytes = storage_bytes(t.dtype, t.numel());
    std::vector<unsigned char> saved(bytes);
    ASSERT_TRUE(t.is_contiguous()) << out;
    std::memcpy(saved.data(), t.host_data(), bytes);
    scale_values(t, 1 + std::max(10 * allowance.at(out), 0x1p-6));
    const std::string line = r.spec->explain_mismatch(*r.impl, *r.call, r.inputs);
    EXPECT_NE(line.find("first divergent node: " + node.name + " ("), std::string::npos) << text << ": " << line;
    EXPECT_NE(line.find("dnnblocks check --case '" + node.problem.to_string() + "@avx512"), std::string::npos) << line;
    std::memcpy(t.host_data(), saved.data(), bytes);
  }
}

}  // namespace dnnb::block_test
