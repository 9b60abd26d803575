// div: y = a / b with numpy broadcasting (`b=SHAPE`); torch: torch.div.
// Tolerance class elementwise: a division is correctly rounded in f32, but kernels may use a reciprocal
// and a multiply (two roundings), so it gets the elementwise budget.
// FLOP model: 1 FLOP per output element.
#include "reference/fill.h"
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_div_spec() {
  OpSpec spec = ops::binary_spec({"div", "torch.div", ToleranceClass::elementwise, reference::div});
  // b is kept away from 0 (|b| >= 0.5) so the quotient is well conditioned.
  spec.fill_inputs = fill_div_inputs;
  return spec;
}

DNNB_REGISTER(register_op(make_div_spec()));

}  // namespace
}  // namespace dnnb
