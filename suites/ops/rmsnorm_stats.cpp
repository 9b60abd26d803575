// rmsnorm_stats: what rmsnorm's forward saves for rmsnorm_bwd, per row of x [..., N]:
// rstd [..., 1] = 1 / sqrt(mean(x^2) + eps), f32 for every dtype (either form: Gemma's (1 + w)
// is applied after). torch: torch.ops.aten._fused_rms_norm(x, (N,), w, eps)[1] (its saved rstd).
// The training step of a block (docs/blocks.md) computes it beside the rmsnorm node.
// Tolerance: OpSpec::output_bounds (reference/norm_stats.h): a sum over N f32 squares.
// FLOP model: 2 per element (multiply, add).
#include "reference/register.h"
#include "suites/ops/norm_stats.h"

namespace dnnb {
namespace {

OpSpec make_rmsnorm_stats_spec() {
  OpSpec spec = ops::family1_spec("rmsnorm_stats", "torch.ops.aten._fused_rms_norm(x, (N,), w, eps)[1]",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::norm_stats_check_problems();
  spec.bench_problems = {"8192x4096", "16384x768"};
  spec.signature = [](const Problem& p) { return ops::norm_stats_signature(p, false); };
  spec.flops = [](const Problem& p) { return 2.0 * static_cast<double>(shape_numel(p.shape)); };
  spec.output_bounds = reference::norm_stats_bounds;
  spec.reference = reference::rmsnorm_stats;
  return spec;
}

DNNB_REGISTER(register_op(make_rmsnorm_stats_spec()));

}  // namespace
}  // namespace dnnb
