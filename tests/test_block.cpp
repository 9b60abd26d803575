// The block layer (core/block.h, suites/blocks/): blocks register like ops with one
// implementation per backend that has every node's op; a graph run on a backend matches the
// float64 graph within the block's allowance; and when one node is perturbed, the divergence
// report names that node, not an earlier or a later one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "core/block.h"
#include "core/check.h"
#include "core/device.h"
#include "core/host_device.h"
#include "core/plan.h"
#include "suites/blocks/block_spec.h"
#include "tests/block_test_util.h"

namespace dnnb {
namespace {

TEST(Block, RegisteredLikeOps) {
  const Registry& reg = Registry::instance();
  for (const char* name : {"gpt2_block", "llama_block"}) {
    const OpSpec* spec = reg.find_op(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->family, "blocks");
    EXPECT_EQ(spec->tolerance, ToleranceClass::block);
    EXPECT_TRUE(spec->explain_mismatch && spec->output_bounds && spec->tokens);
    EXPECT_NE(reg.find_implementation(name, "reference", ""), nullptr);
    // Every backend of this build either runs the block or says which node's op it lacks.
    std::set<std::string> built;
    for (const auto& impl : reg.implementations()) built.insert(impl.backend);
    for (const auto& b : backends()) {
      if (!built.count(b.name) || b.name == "reference") continue;
      bool absent = false;
      for (const Absence& a : reg.absences())
        if (a.op == name && a.backend == b.name) {
          absent = true;
          EXPECT_NE(a.reason.find("node "), std::string::npos) << a.reason;
        }
      EXPECT_NE(absent, reg.find_implementation(name, b.name, "") != nullptr) << name << " on " << b.name;
    }
  }
}

struct BlockCase {
  Problem problem;
  const OpSpec* spec = nullptr;
  BlockGraph graph;
  std::vector<Tensor> inputs;
};

// A block problem's graph (as registered) and its random inputs (the spec's fill_inputs).
BlockCase block_case(const std::string& text, const std::function<Result<BlockGraph>(const Problem&)>& build) {
  BlockCase c;
  c.problem = *Problem::parse(text);
  c.spec = Registry::instance().find_op(c.problem.op);
  auto sig = c.spec->signature(c.problem);
  EXPECT_TRUE(sig.is_ok()) << sig.status().message;
  c.inputs = *make_random_inputs(*c.spec, c.problem, *sig);
  c.graph = *build(c.problem);
  return c;
}

TEST(Block, HostGraphWithinAllowanceOfFloat64) {
  for (const char* text : {"gpt2_block:f32:2x7x64:heads=4", "gpt2_block:bf16:2x7x64:heads=4",
                           "llama_block:f32:2x9x64:ffn=80,heads=4,kv=2", "llama_block:bf16:2x9x64:ffn=80,heads=4,kv=2"}) {
    BlockCase c = block_case(text, block_graph);
    auto ours = block_test::run_on_host(c.graph, c.problem, c.inputs, -1, 0);
    auto f64 = run_block_f64(c.graph, c.inputs);
    ASSERT_TRUE(f64.is_ok()) << f64.status().message;
    EXPECT_EQ(first_divergence(c.graph, ours, *f64, "reference", ""), "") << text;
  }
}

TEST(Block, PerturbedNodeIsNamed) {
  for (const char* text : {"gpt2_block:f32:1x7x64:heads=2", "llama_block:bf16:1x9x64:ffn=80,heads=4,kv=2"}) {
    BlockCase c = block_case(text, block_graph);
    auto f64 = run_block_f64(c.graph, c.inputs);
    ASSERT_TRUE(f64.is_ok()) << f64.status().message;
    const auto allowance = value_allowances(c.graph);
    for (int n = 0; n < static_cast<int>(c.graph.nodes.size()); ++n) {
      const BlockNode& node = c.graph.nodes[n];
      // Scaled by 10 times the node's allowance (at least 2 ulps of bf16): outside it, as a
      // wrong kernel would be.
      const double by = std::max(10 * allowance.at(node.outputs[0]), 0x1p-6);
      auto ours = block_test::run_on_host(c.graph, c.problem, c.inputs, n, by);
      const std::string line = first_divergence(c.graph, ours, *f64, "reference", "");
      EXPECT_NE(line.find("first divergent node: " + node.name + " ("), std::string::npos)
          << text << ": perturbed " << node.name << " by " << by << ", got: " << line;
      EXPECT_NE(line.find("dnnblocks check --case '" + node.problem.to_string() + "@reference'"), std::string::npos) << line;
    }
  }
}

// check's hook end to end: a block case run by the avx512 implementation, one node's output then
// scaled in the workspace, and explain_mismatch (what check calls when the case fails) must name
// that node with its repro line on the case's device.
TEST(Block, CheckHookReadsTheWorkspace) {
  block_test::Avx512BlockRun r;
  block_test::run_block_on_avx512("llama_block:f32:2x9x64:ffn=80,heads=4,kv=2", r);
  if (HasFatalFailure() || IsSkipped()) return;
  Tensor& act = r.values.at("mlp.act.out");
  for (int64_t i = 0; i < act.numel(); ++i) static_cast<float*>(act.host_data())[i] *= 1.01f;
  const std::string line = r.spec->explain_mismatch(*r.impl, *r.call, r.inputs);
  EXPECT_NE(line.find("first divergent node: mlp.act (swiglu)"), std::string::npos) << line;
  EXPECT_NE(line.find("dnnblocks check --case 'swiglu:f32:18x80@avx512:0'"), std::string::npos) << line;
}

}  // namespace
}  // namespace dnnb
