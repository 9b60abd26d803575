// layernorm_stats: what layernorm's forward saves for layernorm_bwd, per row of x [..., N]:
// mean [..., 1] and rstd [..., 1] = 1 / sqrt(var + eps) (biased variance), f32 for every dtype.
// torch: torch.ops.aten.native_layer_norm(x, (N,), w, b, eps)[1:] (its saved mean and rstd).
// The training step of a block (docs/blocks.md) computes them beside the layernorm node.
// Tolerance: OpSpec::output_bounds (reference/norm_stats.h): sums over N f32 terms.
// FLOP model: 4 per element (mean: add; variance: subtract, multiply, add).
#include "reference/register.h"
#include "suites/ops/norm_stats.h"

namespace dnnb {
namespace {

OpSpec make_layernorm_stats_spec() {
  OpSpec spec = ops::family1_spec("layernorm_stats", "torch.ops.aten.native_layer_norm(x, (N,), w, b, eps)[1:]",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::norm_stats_check_problems();
  spec.check_problems.push_back("64x4096:eps=1e-6");
  spec.bench_problems = {"8192x4096", "16384x768"};
  spec.signature = [](const Problem& p) { return ops::norm_stats_signature(p, true); };
  spec.flops = [](const Problem& p) { return 4.0 * static_cast<double>(shape_numel(p.shape)); };
  spec.output_bounds = reference::norm_stats_bounds;
  spec.reference = reference::layernorm_stats;
  return spec;
}

DNNB_REGISTER(register_op(make_layernorm_stats_spec()));

}  // namespace
}  // namespace dnnb
