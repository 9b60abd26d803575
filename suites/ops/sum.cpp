// sum: y = sum over the last dim;
// x [..., N] -> y [...] (1-D x gives a 0-d y); torch: torch.sum(x, -1).
// Tolerance class reduction: a sum over the row, whose rounding grows with its length.
// FLOP model: 1 FLOP per input element (one add).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_sum_spec() {
  return ops::reduction_spec(
      {"sum", "torch.sum", ToleranceClass::reduction, 1.0, 0.0, reference::sum});
}

DNNB_REGISTER(register_op(make_sum_spec()));

}  // namespace
}  // namespace dnnb
