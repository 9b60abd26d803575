// silu_bwd: dx = dy silu'(x), silu'(x) = s (1 + x (1 - s)) with s = sigmoid(x), the gradient of
// F.silu for the incoming gradient dy. torch: torch.autograd.grad(F.silu(x), x, dy). x, dy and
// dx share one shape.
// Tolerance class elementwise: per element a transcendental and a few more roundings, dx
// rounded once from f32.
// FLOP model: 8 FLOP per element: sigmoid 3 (exp, add, divide), silu' 4 (subtract, multiply,
// add, multiply), times dy 1.
#include "reference/act_bwd.h"
#include "reference/register.h"
#include "suites/ops/act_bwd_common.h"

namespace dnnb {
namespace {

OpSpec make_silu_bwd_spec() {
  return ops::act_bwd_spec(
      {"silu_bwd", "torch.autograd.grad(F.silu(x), x, dy)", {}, 8.0, reference::silu_bwd, nullptr});
}

DNNB_REGISTER(register_op(make_silu_bwd_spec()));

}  // namespace
}  // namespace dnnb
