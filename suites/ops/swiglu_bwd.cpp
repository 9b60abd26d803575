// swiglu_bwd: the gradient of y = silu(a) * b for the incoming gradient dy:
//   da = dy b silu'(a), silu'(a) = s (1 + a (1 - s)) with s = sigmoid(a);  db = dy silu(a).
// torch: torch.autograd.grad(F.silu(a) * b, (a, b), dy). Inputs a, b, dy and outputs da, db
// share one shape of any rank.
// Tolerance class elementwise: per element a transcendental and a few more roundings, each
// output rounded once from f32.
// FLOP model: 11 FLOP per element: sigmoid 3 (exp, add, divide), silu 1, db 1, silu' 4
// (subtract, multiply, add, multiply), da 2.
#include "reference/glu.h"
#include "reference/register.h"
#include "suites/ops/glu_common.h"

namespace dnnb {
namespace {

OpSpec make_swiglu_bwd_spec() {
  return ops::glu_spec({"swiglu_bwd", "torch.autograd.grad(F.silu(a) * b, (a, b), dy)", true, 11.0,
                        reference::swiglu_bwd});
}

DNNB_REGISTER(register_op(make_swiglu_bwd_spec()));

}  // namespace
}  // namespace dnnb
