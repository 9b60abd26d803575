// linear: y = x @ w^T + b; torch: F.linear(x, w, b), with w [out, in] as HF models store it.
// Inputs x [M, K], w [N, K], b [N] (bias=1 only); output y [M, N], of the problem dtype or,
// for f16/bf16 inputs, f32 (y.dt=f32). Accumulation is f32.
// Tolerance class dot_product: each output sums K products and the bias.
// FLOP model: 2 M N K, plus M N for the bias.
#include "reference/matmul.h"
#include "reference/register.h"
#include "suites/ops/gemm_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> linear_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"bias"}, 3));
  auto d = ops::linear_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, {d->m, d->k}), ops::tensor_spec("w", p.dtype, {d->n, d->k})};
  if (d->bias) sig.inputs.push_back(ops::tensor_spec("b", p.dtype, {d->n}));
  sig.outputs = {ops::product_output(p, {d->m, d->n})};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_linear_spec() {
  OpSpec spec = ops::op_spec("2", "linear", "F.linear(x, w, b)", ops::float_dtypes(), ToleranceClass::dot_product);
  spec.check_problems = {"8x16x32", "17x31x45:bias=1", "1x96x200:bias=1", "12x20x28:bias=1,x.layout=padded",
                         "64x128x256:bias=1", "100x300x1000", "33x65x4096:bias=1",
                         "24x40x56:w.layout=transposed",
                         {"8x24x40:bias=1,y.dt=f32", {DType::f16, DType::bf16}}};
  // Llama-3-8B's projections (hidden 4096, FFN 14336) at 4096 and 16384 tokens.
  spec.bench_problems = {"4096x4096x4096",  "4096x14336x4096",  "4096x4096x14336",
                         "16384x4096x4096", "16384x14336x4096", "16384x4096x14336"};
  spec.signature = linear_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::linear_desc(p);
    return d ? ops::gemm_flops(*d) : 0.0;
  };
  spec.dot_product_error = [](const Problem& p, size_t) {
    auto d = ops::linear_desc(p);
    return d ? ops::gemm_error(*d) : DotProductError{};
  };
  spec.reference = reference::linear;
  return spec;
}

DNNB_REGISTER(register_op(make_linear_spec()));

}  // namespace
}  // namespace dnnb
