// geglu_bwd: the gradient of y = g(a) * b, g = gelu_tanh, for the incoming gradient dy:
//   da = dy b g'(a), g'(a) = 0.5 (1 + t) + 0.5 a (1 - t^2) k (1 + 3 c a^2);  db = dy g(a),
// with t = tanh(k (a + c a^3)), k = sqrt(2/pi), c = 0.044715.
// torch: torch.autograd.grad(F.gelu(a, approximate='tanh') * b, (a, b), dy). Inputs a, b, dy
// and outputs da, db share one shape of any rank.
// Tolerance class elementwise: per element a transcendental and a few more roundings, each
// output rounded once from f32.
// FLOP model: 21 FLOP per element: g 9 (as gelu_tanh; its a^2, 0.5 a and 1 + t are reused),
// db 1, g' 9 (0.5 (1 + t), t^2, 1 - t^2, 3 c a^2, add 1, times k, two products, the sum),
// da 2.
#include "reference/glu.h"
#include "reference/register.h"
#include "suites/ops/glu_common.h"

namespace dnnb {
namespace {

OpSpec make_geglu_bwd_spec() {
  return ops::glu_spec({"geglu_bwd", "torch.autograd.grad(F.gelu(a, approximate='tanh') * b, (a, b), dy)", true,
                        21.0, reference::geglu_bwd});
}

DNNB_REGISTER(register_op(make_geglu_bwd_spec()));

}  // namespace
}  // namespace dnnb
