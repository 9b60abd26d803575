// mul: y = a * b with numpy broadcasting (`b=SHAPE`); torch: torch.mul.
// Tolerance class exact: one correctly rounded operation per element.
// FLOP model: 1 FLOP per output element.
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_mul_spec() {
  return ops::binary_spec({"mul", "torch.mul", ToleranceClass::exact, reference::mul});
}

DNNB_REGISTER(register_op(make_mul_spec()));

}  // namespace
}  // namespace dnnb
