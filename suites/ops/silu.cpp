// silu: y = x * sigmoid(x); torch: F.silu.
// Tolerance class elementwise: a transcendental per element.
// FLOP model: 4 FLOP per element: exp, add, divide, multiply.
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_silu_spec() {
  return ops::unary_spec({"silu", "F.silu", ToleranceClass::elementwise, 4.0, reference::silu});
}

DNNB_REGISTER(register_op(make_silu_spec()));

}  // namespace
}  // namespace dnnb
