// add: y = a + b with numpy broadcasting (`b=SHAPE`); torch: torch.add.
// Tolerance class exact: one correctly rounded operation per element.
// FLOP model: 1 FLOP per output element.
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_add_spec() {
  return ops::binary_spec({"add", "torch.add", ToleranceClass::exact, reference::add});
}

DNNB_REGISTER(register_op(make_add_spec()));

}  // namespace
}  // namespace dnnb
