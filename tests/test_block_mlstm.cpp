// The mlstm_layer block (suites/blocks/mlstm_layer.cpp, xLSTMBlock): it runs on
// avx512 within its allowance of the float64 graph, and when any one node's output is perturbed
// in the workspace after the run, check's hook (explain_mismatch) names that node and its own
// repro line, not an earlier or a later one.
#include <gtest/gtest.h>

#include "tests/block_test_util.h"

namespace dnnb {
namespace {

TEST(BlockMlstm, PerturbedNodeIsNamedOnAvx512) {
  // A sequence inside one chunk (f32), one across chunks of 16 with a tail (bf16, DQK 16, DV
  // 32), and the check problem whose draw has a head row of h of variance near eps, which the
  // per-head norm amplifies (bf16 1x129x96; docs/blocks.md, "mlstm_layer").
  for (const char* text : {"mlstm_layer:f32:1x11x32:ffn=48,heads=2", "mlstm_layer:bf16:2x37x64:chunk=16,ffn=128,heads=2",
                           "mlstm_layer:bf16:1x129x96:ffn=256,heads=2"}) {
    block_test::expect_perturbed_node_named(text);
    if (HasFatalFailure() || IsSkipped()) return;  // as a failed ASSERT or a skip in the test's own body
  }
}

}  // namespace
}  // namespace dnnb
