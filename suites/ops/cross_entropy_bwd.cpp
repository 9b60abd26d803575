// cross_entropy_bwd: the gradient of cross_entropy's mean loss with grad 1:
// dlogits[r] = (softmax(logits[r]) - onehot(target[r])) / kept for kept rows, 0 for rows
// with target == ignore_index (all zeros when every row is ignored, as torch's gradient);
// torch: F.cross_entropy(logits, target) backward. Inputs logits [N, C] (f32 or bf16),
// target [N] (i64); output dlogits [N, C]; ignore_index=I (default -100).
// Tolerance class loss: a logsumexp per row, then one exp and a scale per logit.
// FLOP model: 6 FLOP per logit (max, subtract, exp, add for the logsumexp; exp of
// x - lse, divide by the kept count; the one-hot subtract is one per row, neglected).
#include "reference/fill.h"
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_cross_entropy_bwd_spec() {
  OpSpec spec = ops::family1_spec("cross_entropy_bwd", "F.cross_entropy(logits, target) backward",
                                   ops::loss_dtypes(), ToleranceClass::loss);
  spec.check_problems = ops::cross_entropy_check_problems();
  spec.bench_problems = ops::cross_entropy_bench_problems();
  spec.device_wide_counters = true;  // CUDA: the blocks-finished counter of GridCounters
  spec.signature = [](const Problem& p) { return ops::cross_entropy_signature(p, true); };
  spec.flops = [](const Problem& p) {
    if (p.shape.size() != 2) return 0.0;
    return 6.0 * static_cast<double>(p.shape[0]) * static_cast<double>(p.shape[1]);
  };
  spec.fill_inputs = fill_cross_entropy_inputs;
  spec.reference = reference::cross_entropy_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_cross_entropy_bwd_spec()));

}  // namespace
}  // namespace dnnb
