// mean: y = mean over the last dim;
// x [..., N] -> y [...] (1-D x gives a 0-d y); torch: torch.mean(x, -1).
// Tolerance class reduction: a sum over the row, whose rounding grows with its length.
// FLOP model: 1 FLOP per input element (one add) + 1 per row (the divide).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_mean_spec() {
  return ops::reduction_spec(
      {"mean", "torch.mean", ToleranceClass::reduction, 1.0, 1.0, reference::mean});
}

DNNB_REGISTER(register_op(make_mean_spec()));

}  // namespace
}  // namespace dnnb
