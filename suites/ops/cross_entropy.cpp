// cross_entropy: loss = mean over rows with target != ignore_index of
// logsumexp(logits[r]) - logits[r][target[r]]; torch: F.cross_entropy(logits, target).
// Inputs logits [N, C] (f32 or bf16), target [N] (i64); output loss [] (0-d, problem dtype);
// ignore_index=I (default -100; when given, random targets ignore about one row in eight).
// Every row ignored gives NaN, as torch.
// Tolerance class loss: a logsumexp per row, then a mean over rows.
// FLOP model: 4 FLOP per logit (max, subtract, exp, add) + 3 per row (log, add back the max,
// subtract the target logit; the final mean is negligible).
#include "reference/fill.h"
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_cross_entropy_spec() {
  OpSpec spec = ops::family1_spec("cross_entropy", "F.cross_entropy(logits, target)",
                                   ops::loss_dtypes(), ToleranceClass::loss);
  spec.check_problems = ops::cross_entropy_check_problems();
  spec.bench_problems = ops::cross_entropy_bench_problems();
  spec.device_wide_counters = true;  // CUDA: the blocks-finished counter of GridCounters
  spec.signature = [](const Problem& p) { return ops::cross_entropy_signature(p, false); };
  spec.flops = [](const Problem& p) {
    if (p.shape.size() != 2) return 0.0;
    const double rows = static_cast<double>(p.shape[0]), cols = static_cast<double>(p.shape[1]);
    return 4.0 * rows * cols + 3.0 * rows;
  };
  spec.fill_inputs = fill_cross_entropy_inputs;
  spec.reference = reference::cross_entropy;
  return spec;
}

DNNB_REGISTER(register_op(make_cross_entropy_spec()));

}  // namespace
}  // namespace dnnb
