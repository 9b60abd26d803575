// gelu_bwd: dx = dy gelu'(x), the gradient of F.gelu for the incoming gradient dy.
//   approximate=none (default): gelu'(x) = Phi(x) + x phi(x), Phi the standard normal CDF
//     (0.5 (1 + erf(x / sqrt 2))), phi its density e^{-x^2/2} / sqrt(2 pi);
//   approximate=tanh: gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), with
//     t = tanh(k (x + c x^3)), k = sqrt(2/pi), c = 0.044715 (GPT-2's form).
// torch: torch.autograd.grad(F.gelu(x, approximate=A), x, dy). x, dy and dx share one shape.
// Tolerance class elementwise: per element one or two transcendentals and a few more roundings,
// dx rounded once from f32.
// FLOP model, per element: none 12 (Phi as gelu's 5 less its two multiplies, so 3; x^2, times
// -1/2, exp, times 1/sqrt(2 pi): 4; x phi, the sum, times dy: 3; and the halving and add of
// erf's 1 + erf: 2); tanh 15 (the argument 4 as gelu_tanh's, tanh 1, the slope 9 as
// geglu_bwd's, times dy 1).
#include "reference/act_bwd.h"
#include "reference/register.h"
#include "suites/ops/act_bwd_common.h"

namespace dnnb {
namespace {

Status check_gelu_params(const Problem& p) {
  auto tanh_form = ops::gelu_bwd_tanh(p);
  return tanh_form ? Status::ok() : tanh_form.status();
}

OpSpec make_gelu_bwd_spec() {
  OpSpec spec = ops::act_bwd_spec({"gelu_bwd", "torch.autograd.grad(F.gelu(x, approximate=A), x, dy)",
                                   {"approximate"}, 12.0, reference::gelu_bwd, check_gelu_params});
  // The tanh form on the same edges: layouts, odd sizes, many rows.
  for (const char* p : {"64x4096:approximate=tanh", "333x1000:approximate=tanh,layout=transposed",
                        "4097:approximate=tanh", "333x1000:approximate=tanh,dy.layout=transposed",
                        "1x7:approximate=tanh"})
    spec.check_problems.push_back(p);
  spec.bench_problems.push_back("8192x8192:approximate=tanh");
  spec.flops = [](const Problem& p) {
    auto tanh_form = ops::gelu_bwd_tanh(p);
    return (tanh_form && *tanh_form ? 15.0 : 12.0) * static_cast<double>(shape_numel(p.shape));
  };
  return spec;
}

DNNB_REGISTER(register_op(make_gelu_bwd_spec()));

}  // namespace
}  // namespace dnnb
