// layernorm_bwd: the gradient of layernorm for the incoming gradient dy, from the statistics
// the forward saved (as torch's native_layer_norm_backward): with xhat = (x - mean) rstd and
// g = dy w,
//   dx = rstd (g - mean_j(g) - xhat mean_j(g xhat)),  dw = sum_rows dy xhat,  db = sum_rows dy.
// torch: torch.ops.aten.native_layer_norm_backward(dy, x, (N,), mean, rstd, w, b, [True]*3), the
// function autograd of F.layer_norm calls. Inputs x [..., N], w [N], dy [..., N], mean and rstd
// [..., 1] (f32); outputs dx [..., N], dw [N], db [N]; eps=F (default 1e-5) sets only the random
// cases' statistics.
// Tolerance: dx the normalization class; dw and db bounds growing with the rows summed
// (reference/norm_bwd.h, docs/ops-family1.md).
// FLOP model: 13 FLOP per element: xhat 2, g 1, the row sums of g and g xhat 3, dx 4 (fma,
// subtract, multiply), dw 2 (fma), db 1.
#include "reference/register.h"
#include "suites/ops/norm_bwd.h"

namespace dnnb {
namespace {

OpSpec make_layernorm_bwd_spec() {
  OpSpec spec = ops::family1_spec("layernorm_bwd", "torch.ops.aten.native_layer_norm_backward(dy, x, (N,), mean, rstd, w, b)",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::norm_bwd_check_problems();
  spec.bench_problems = ops::norm_bwd_bench_problems();
  spec.signature = [](const Problem& p) { return ops::norm_bwd_signature(p, true); };
  spec.flops = [](const Problem& p) { return 13.0 * static_cast<double>(shape_numel(p.shape)); };
  spec.fill_inputs = reference::fill_norm_bwd_inputs;
  spec.output_bounds = reference::norm_bwd_bounds;
  spec.reference = reference::layernorm_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_layernorm_bwd_spec()));

}  // namespace
}  // namespace dnnb
