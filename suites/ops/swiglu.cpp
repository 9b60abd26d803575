// swiglu: y = silu(a) * b = a sigmoid(a) b, the gated activation of Llama's FFN (a the gate
// projection, b the up projection); torch: F.silu(a) * b. Inputs a, b and output y share one
// shape of any rank.
// Tolerance class elementwise: a transcendental and three more roundings per element; the
// kernels round once from f32 (torch rounds silu(a) to the dtype before the multiply).
// FLOP model: 5 FLOP per element: silu's 4 (exp, add, divide, multiply) and the multiply by b.
#include "reference/glu.h"
#include "reference/register.h"
#include "suites/ops/glu_common.h"

namespace dnnb {
namespace {

OpSpec make_swiglu_spec() {
  return ops::glu_spec({"swiglu", "F.silu(a) * b", false, 5.0, reference::swiglu});
}

DNNB_REGISTER(register_op(make_swiglu_spec()));

}  // namespace
}  // namespace dnnb
