// max: y = max over the last dim (NaN propagates);
// x [..., N] -> y [...] (1-D x gives a 0-d y); torch: torch.amax(x, -1).
// Tolerance class selection: a max selects one input, no rounding at all, so it must match
// exactly (a kernel that compares 16-bit values as integer keys and picks a neighbouring key
// fails by one ulp).
// FLOP model: 1 FLOP per input element (one compare).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_max_spec() {
  return ops::reduction_spec(
      {"max", "torch.amax", ToleranceClass::selection, 1.0, 0.0, reference::max});
}

DNNB_REGISTER(register_op(make_max_spec()));

}  // namespace
}  // namespace dnnb
