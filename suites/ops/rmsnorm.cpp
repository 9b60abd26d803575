// rmsnorm over the last dim; torch: F.rms_norm(x, (N,), w, eps). Inputs x [..., N], w [N];
// eps=F (default 1e-6); form=torch (default): y = x / sqrt(mean(x^2) + eps) * w, or
// form=gemma (Gemma RMSNorm, in f32): y = x / sqrt(mean(x^2) + eps) * (1 + w).
// Tolerance class normalization: a mean of squares over the row, then two multiplies.
// FLOP model: 4 FLOP per element (square, add, multiply by 1/rms, multiply by the weight);
// the gemma form adds N (1 + w, once per column).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> rmsnorm_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"eps", "form"}));
  auto eps = ops::number_param(p, "eps", 1e-6, 0.0);
  if (!eps) return eps.status();
  const std::string form = p.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input("rmsnorm: parameter form='" + form + "' is not torch or gemma");
  const int64_t n = p.shape.back();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape), ops::tensor_spec("w", p.dtype, {n})};
  sig.outputs = {ops::tensor_spec("y", p.dtype, p.shape)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

double rmsnorm_flops(const Problem& p) {
  const double gemma_weights = p.get("form") == "gemma" ? static_cast<double>(p.shape.back()) : 0.0;
  return 4.0 * static_cast<double>(shape_numel(p.shape)) + gemma_weights;
}

OpSpec make_rmsnorm_spec() {
  OpSpec spec = ops::family1_spec("rmsnorm", "F.rms_norm(x, (N,), w, eps)",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::row_check_problems();
  for (const char* p : {"64x4096:form=gemma", "333x1000:form=gemma,layout=transposed",
                        "64x4096:eps=1e-5,form=gemma", "1x8192:eps=0.1", "4097:form=gemma"})
    spec.check_problems.push_back(p);
  spec.check_problems.push_back(ops::kManyRowsProblem);
  spec.check_problems.push_back(std::string(ops::kManyRowsProblem) + ":form=gemma");
  spec.bench_problems = ops::row_bench_problems();
  spec.bench_problems.push_back("16384x8192:form=gemma");
  spec.signature = rmsnorm_signature;
  spec.flops = rmsnorm_flops;
  spec.reference = reference::rmsnorm;
  return spec;
}

DNNB_REGISTER(register_op(make_rmsnorm_spec()));

}  // namespace
}  // namespace dnnb
