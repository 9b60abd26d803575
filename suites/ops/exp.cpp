// exp: y = exp(x); torch: torch.exp.
// Tolerance class elementwise: a transcendental per element.
// FLOP model: 1 FLOP per element (a transcendental counts as one).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_exp_spec() {
  return ops::unary_spec({"exp", "torch.exp", ToleranceClass::elementwise, 1.0, reference::exp});
}

DNNB_REGISTER(register_op(make_exp_spec()));

}  // namespace
}  // namespace dnnb
