// geglu: y = gelu_tanh(a) * b = 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) b, the gated
// activation of Gemma's FFN; torch: F.gelu(a, approximate='tanh') * b. Inputs a, b and output
// y share one shape of any rank.
// Tolerance class elementwise: a transcendental and several more roundings per element; the
// kernels round once from f32 (torch rounds gelu(a) to the dtype before the multiply).
// FLOP model: 10 FLOP per element: gelu_tanh's 9 (a^3 (2), times 0.044715, add a, times
// sqrt(2/pi), tanh, add 1, two multiplies) and the multiply by b.
#include "reference/glu.h"
#include "reference/register.h"
#include "suites/ops/glu_common.h"

namespace dnnb {
namespace {

OpSpec make_geglu_spec() {
  return ops::glu_spec({"geglu", "F.gelu(a, approximate='tanh') * b", false, 10.0, reference::geglu});
}

DNNB_REGISTER(register_op(make_geglu_spec()));

}  // namespace
}  // namespace dnnb
