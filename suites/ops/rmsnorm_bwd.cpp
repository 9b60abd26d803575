// rmsnorm_bwd: the gradient of rmsnorm for the incoming gradient dy, from the rstd the forward
// saved (as torch's _fused_rms_norm_backward): with xhat = x rstd and g = dy w (form=torch) or
// dy (1 + w) (form=gemma),
//   dx = rstd (g - xhat mean_j(g xhat)),  dw = sum_rows dy xhat.
// torch: torch.ops.aten._fused_rms_norm_backward(dy, x, (N,), rstd, w, [True, True]), the
// function autograd of F.rms_norm calls on CUDA (on CPU autograd differentiates the composite,
// the same function). Inputs x [..., N], w [N], dy [..., N], rstd [..., 1] (f32); outputs
// dx [..., N], dw [N]; eps=F (default 1e-6) sets only the random cases' rstd; form=torch|gemma.
// Tolerance: dx the normalization class; dw a bound growing with the rows summed
// (reference/norm_bwd.h, docs/ops-family1.md).
// FLOP model: 9 FLOP per element: xhat 1, g 1, the row sum of g xhat 2, dx 3 (fma, subtract,
// multiply), dw 2 (fma); the gemma form adds N (1 + w, once per column).
#include "reference/register.h"
#include "suites/ops/norm_bwd.h"

namespace dnnb {
namespace {

double rmsnorm_bwd_flops(const Problem& p) {
  const double gemma_weights = p.get("form") == "gemma" ? static_cast<double>(p.shape.back()) : 0.0;
  return 9.0 * static_cast<double>(shape_numel(p.shape)) + gemma_weights;
}

OpSpec make_rmsnorm_bwd_spec() {
  OpSpec spec = ops::family1_spec("rmsnorm_bwd", "torch.ops.aten._fused_rms_norm_backward(dy, x, (N,), rstd, w)",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::norm_bwd_check_problems();
  for (const char* p : {"64x4096:form=gemma", "333x1000:form=gemma,layout=transposed", "4500x2056:form=gemma"})
    spec.check_problems.push_back(p);
  spec.bench_problems = ops::norm_bwd_bench_problems();
  spec.bench_problems.push_back("8192x4096:form=gemma");
  spec.signature = [](const Problem& p) { return ops::norm_bwd_signature(p, false); };
  spec.flops = rmsnorm_bwd_flops;
  spec.fill_inputs = reference::fill_norm_bwd_inputs;
  spec.output_bounds = reference::norm_bwd_bounds;
  spec.reference = reference::rmsnorm_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_rmsnorm_bwd_spec()));

}  // namespace
}  // namespace dnnb
