// gelu: y = 0.5 x (1 + erf(x / sqrt 2)); torch: F.gelu(approximate='none').
// Tolerance class elementwise: a transcendental per element.
// FLOP model: 5 FLOP per element: scale by 1/sqrt2, erf, add 1, two multiplies.
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_gelu_spec() {
  return ops::unary_spec(
      {"gelu", "F.gelu(approximate='none')", ToleranceClass::elementwise, 5.0, reference::gelu});
}

DNNB_REGISTER(register_op(make_gelu_spec()));

}  // namespace
}  // namespace dnnb
