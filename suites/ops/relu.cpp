// relu: y = max(x, 0); torch: torch.relu.
// Tolerance class selection: y is x or 0, no rounding at all, so it must match exactly.
// FLOP model: 1 FLOP per element (one compare-select).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_relu_spec() {
  return ops::unary_spec({"relu", "torch.relu", ToleranceClass::selection, 1.0, reference::relu});
}

DNNB_REGISTER(register_op(make_relu_spec()));

}  // namespace
}  // namespace dnnb
