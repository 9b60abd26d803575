// tanh: y = tanh(x); torch: torch.tanh.
// Tolerance class elementwise: a transcendental per element.
// FLOP model: 1 FLOP per element (a transcendental counts as one).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_tanh_spec() {
  return ops::unary_spec(
      {"tanh", "torch.tanh", ToleranceClass::elementwise, 1.0, reference::tanh});
}

DNNB_REGISTER(register_op(make_tanh_spec()));

}  // namespace
}  // namespace dnnb
