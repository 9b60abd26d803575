// The blocks' training step (gpt2_block_bwd, llama_block_bwd; docs/blocks.md, "The training
// step"): a graph of several outputs run on the host with the reference implementation of each
// node stays within its allowance of the float64 graph, and when one node of the forward or of
// the backward is perturbed, the divergence report names that node and no other.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/block.h"
#include "core/check.h"
#include "core/host_device.h"
#include "suites/blocks/block_spec.h"
#include "tests/block_test_util.h"

namespace dnnb {
namespace {

struct Case {
  Problem problem;
  BlockGraph graph;
  std::vector<Tensor> inputs;
};

Case make_case(const std::string& text) {
  Case c;
  c.problem = *Problem::parse(text);
  const OpSpec* spec = Registry::instance().find_op(c.problem.op);
  EXPECT_NE(spec, nullptr) << text;
  auto sig = spec->signature(c.problem);
  EXPECT_TRUE(sig.is_ok()) << sig.status().message;
  c.inputs = *make_random_inputs(*spec, c.problem, *sig);
  c.graph = *block_graph(c.problem);
  return c;
}

TEST(BlockBwd, OutputsAreDxAndEveryWeightsGrad) {
  for (const char* text : {"gpt2_block_bwd:f32:1x7x64:heads=2", "llama_block_bwd:f32:1x9x64:ffn=80,heads=4,kv=2"}) {
    Case c = make_case(text);
    ASSERT_FALSE(c.graph.outputs.empty());
    EXPECT_EQ(c.graph.outputs[0], "dx");
    std::vector<std::string> want;
    for (const BlockTensor& t : c.graph.inputs)
      if (t.weight) want.push_back(t.name + ".grad");
    EXPECT_EQ(std::vector<std::string>(c.graph.outputs.begin() + 1, c.graph.outputs.end()), want) << text;
    for (const BlockTensor& t : c.graph.inputs)
      if (t.weight) EXPECT_EQ(c.graph.values.at(t.name + ".grad").shape, t.shape) << t.name;
  }
}

TEST(BlockBwd, HostGraphWithinAllowanceOfFloat64) {
  for (const char* text : {"gpt2_block_bwd:f32:2x7x64:heads=4", "gpt2_block_bwd:bf16:2x7x64:heads=4",
                           "llama_block_bwd:f32:2x9x64:ffn=80,heads=4,kv=2", "llama_block_bwd:bf16:2x9x64:ffn=80,heads=4,kv=1"}) {
    Case c = make_case(text);
    auto ours = block_test::run_on_host(c.graph, c.problem, c.inputs, -1, 0);
    auto f64 = run_block_f64(c.graph, c.inputs);
    ASSERT_TRUE(f64.is_ok()) << f64.status().message;
    EXPECT_EQ(first_divergence(c.graph, ours, *f64, "reference", ""), "") << text;
  }
}

TEST(BlockBwd, PerturbedNodeIsNamed) {
  for (const char* text : {"gpt2_block_bwd:f32:1x7x64:heads=2", "llama_block_bwd:bf16:1x9x64:ffn=80,heads=4,kv=2"}) {
    Case c = make_case(text);
    auto f64 = run_block_f64(c.graph, c.inputs);
    ASSERT_TRUE(f64.is_ok()) << f64.status().message;
    const auto allowance = value_allowances(c.graph);
    for (int n = 0; n < static_cast<int>(c.graph.nodes.size()); ++n) {
      const BlockNode& node = c.graph.nodes[n];
      // 10 times the largest allowance of the node's outputs (at least 2 ulps of bf16).
      double most = 0;
      for (const std::string& out : node.outputs) most = std::max(most, allowance.at(out));
      const double by = std::max(10 * most, 0x1p-6);
      auto ours = block_test::run_on_host(c.graph, c.problem, c.inputs, n, by);
      const std::string line = first_divergence(c.graph, ours, *f64, "reference", "");
      EXPECT_NE(line.find("first divergent node: " + node.name + " ("), std::string::npos)
          << text << ": perturbed " << node.name << " by " << by << ", got: " << line;
      EXPECT_NE(line.find("dnnblocks check --case '" + node.problem.to_string() + "@reference'"), std::string::npos) << line;
    }
  }
}

}  // namespace
}  // namespace dnnb
