// The Gemma 2 and Zamba 2 blocks (suites/blocks/gemma2_layer.cpp, zamba2_*.cpp): each runs on
// avx512 within its allowance of the float64 graph, and when any one node's output is perturbed
// in the workspace after the run, check's hook (explain_mismatch) names that node and its own
// repro line, not an earlier or a later one.
#include <gtest/gtest.h>

#include "tests/block_test_util.h"

namespace dnnb {
namespace {

TEST(BlockGemma2Zamba2, PerturbedNodeIsNamedOnAvx512) {
  for (const char* text : {"gemma2_layer:f32:1x11x32:ffn=48,head_dim=16,heads=4,kv=2,window=4",
                           "gemma2_layer:bf16:2x7x48:ffn=64,head_dim=8,heads=2,kv=1,qscale=12",
                           "zamba2_mlp:bf16:1x9x32:ffn=40,rank=4",
                           "zamba2_attn_layer:f32:1x9x32:adapter=1,ffn=40,heads=4,rank=4,rope=1"}) {
    block_test::expect_perturbed_node_named(text);
    if (HasFatalFailure() || IsSkipped()) return;  // as a failed ASSERT or a skip in the test's own body
  }
}

}  // namespace
}  // namespace dnnb
