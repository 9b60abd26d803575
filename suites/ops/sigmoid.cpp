// sigmoid: y = 1 / (1 + exp(-x)); torch: torch.sigmoid.
// Tolerance class elementwise: a transcendental per element.
// FLOP model: 3 FLOP per element: exp, add, divide (a transcendental counts as one).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_sigmoid_spec() {
  return ops::unary_spec(
      {"sigmoid", "torch.sigmoid", ToleranceClass::elementwise, 3.0, reference::sigmoid});
}

DNNB_REGISTER(register_op(make_sigmoid_spec()));

}  // namespace
}  // namespace dnnb
