// gelu_tanh: y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); torch: F.gelu(approximate='tanh').
// Tolerance class elementwise: a transcendental per element.
// FLOP model: 9 FLOP per element: x^3 (2), times 0.044715, add x, times sqrt(2/pi),
// tanh, add 1, two multiplies.
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_gelu_tanh_spec() {
  return ops::unary_spec(
      {"gelu_tanh", "F.gelu(approximate='tanh')", ToleranceClass::elementwise, 9.0, reference::gelu_tanh});
}

DNNB_REGISTER(register_op(make_gelu_tanh_spec()));

}  // namespace
}  // namespace dnnb
