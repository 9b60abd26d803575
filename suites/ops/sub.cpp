// sub: y = a - b with numpy broadcasting (`b=SHAPE`); torch: torch.sub.
// Tolerance class exact: one correctly rounded operation per element.
// FLOP model: 1 FLOP per output element.
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_sub_spec() {
  return ops::binary_spec({"sub", "torch.sub", ToleranceClass::exact, reference::sub});
}

DNNB_REGISTER(register_op(make_sub_spec()));

}  // namespace
}  // namespace dnnb
