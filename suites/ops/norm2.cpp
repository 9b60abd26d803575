// norm2: y = sqrt(sum x^2) over the last dim;
// x [..., N] -> y [...] (1-D x gives a 0-d y); torch: torch.linalg.vector_norm(x, -1).
// Tolerance class reduction: a sum over the row, whose rounding grows with its length.
// FLOP model: 2 FLOP per input element (multiply, add) + 1 per row (sqrt).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

OpSpec make_norm2_spec() {
  return ops::reduction_spec(
      {"norm2", "torch.linalg.vector_norm", ToleranceClass::reduction, 2.0, 1.0, reference::norm2});
}

DNNB_REGISTER(register_op(make_norm2_spec()));

}  // namespace
}  // namespace dnnb
