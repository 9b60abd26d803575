// dot: y = sum over the last dim of a * b; torch: torch.dot(a, b) for 1-D a and b,
// torch.linalg.vecdot(a, b) for a batch of rows. Inputs a, b [..., K]; output y [...] (0-d
// for 1-D inputs), of the problem dtype or, for f16/bf16 inputs, f32 (y.dt=f32).
// Tolerance class dot_product: each output sums K products.
// FLOP model: 2 per input pair (multiply, add).
#include "reference/matmul.h"
#include "reference/register.h"
#include "suites/ops/gemm_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> dot_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {}));
  Shape rows(p.shape.begin(), p.shape.end() - 1);
  Signature sig;
  sig.inputs = {ops::tensor_spec("a", p.dtype, p.shape), ops::tensor_spec("b", p.dtype, p.shape)};
  sig.outputs = {ops::product_output(p, rows)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_dot_spec() {
  OpSpec spec = ops::op_spec("2", "dot", "torch.dot(a, b) / torch.linalg.vecdot(a, b)", ops::float_dtypes(),
                             ToleranceClass::dot_product);
  spec.check_problems = {"256", "1", "7x1001", "65536", "3x5x17", "64x4096:a.layout=padded", "4500x2056",
                         {"512:y.dt=f32", {DType::f16, DType::bf16}}};
  spec.bench_problems = {"16777216", "4096x4096", "1x4096"};
  spec.signature = dot_signature;
  spec.flops = [](const Problem& p) { return 2.0 * static_cast<double>(shape_numel(p.shape)); };
  spec.dot_product_error = [](const Problem& p, size_t) { return DotProductError{p.shape.back(), 0}; };
  spec.reference = reference::dot;
  return spec;
}

DNNB_REGISTER(register_op(make_dot_spec()));

}  // namespace
}  // namespace dnnb
