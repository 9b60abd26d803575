// layernorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b, biased variance;
// torch: F.layer_norm(x, (N,), w, b, eps). Inputs x [..., N], w [N], b [N]; eps=F (default
// 1e-5).
// Tolerance class normalization: mean and variance over the row, then scale and shift.
// FLOP model: 8 FLOP per element (mean: add; variance: subtract, multiply, add; output:
// subtract, multiply by 1/std, multiply by w, add b).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> layernorm_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"eps"}));
  auto eps = ops::number_param(p, "eps", 1e-5, 0.0);
  if (!eps) return eps.status();
  const int64_t n = p.shape.back();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape), ops::tensor_spec("w", p.dtype, {n}),
                ops::tensor_spec("b", p.dtype, {n})};
  sig.outputs = {ops::tensor_spec("y", p.dtype, p.shape)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_layernorm_spec() {
  OpSpec spec = ops::family1_spec("layernorm", "F.layer_norm(x, (N,), w, b, eps)",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::row_check_problems();
  spec.check_problems.push_back("64x4096:eps=1e-6");
  spec.check_problems.push_back("1x8192:eps=0.1");
  spec.check_problems.push_back(ops::kManyRowsProblem);
  spec.bench_problems = ops::row_bench_problems();
  spec.signature = layernorm_signature;
  spec.flops = [](const Problem& p) { return 8.0 * static_cast<double>(shape_numel(p.shape)); };
  spec.reference = reference::layernorm;
  return spec;
}

DNNB_REGISTER(register_op(make_layernorm_spec()));

}  // namespace
}  // namespace dnnb
