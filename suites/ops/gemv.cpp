// gemv: y[i] = w @ x[i] for each of B vectors; torch: torch.mv(w, x[i]) (B = 1 is torch.mv).
// The decode-time product: one token (or a few) times a weight matrix, bound by reading w.
// Inputs w [N, K], x [B, K]; output y [B, N], of the problem dtype or, for f16/bf16 inputs,
// f32 (y.dt=f32). Accumulation is f32.
// Tolerance class dot_product: each output sums K products.
// FLOP model: 2 B N K.
#include "reference/matmul.h"
#include "reference/register.h"
#include "suites/ops/gemm_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> gemv_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"batch"}, 2));
  auto d = ops::gemv_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("w", p.dtype, {d->n, d->k}), ops::tensor_spec("x", p.dtype, {d->m, d->k})};
  sig.outputs = {ops::product_output(p, {d->m, d->n})};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_gemv_spec() {
  OpSpec spec = ops::op_spec("2", "gemv", "torch.mv(w, x)", ops::float_dtypes(), ToleranceClass::dot_product);
  spec.check_problems = {"64x128", "97x203:batch=3", "256x512:batch=8", "1000x4096", "4096x1000:batch=16",
                         "7x1", "1x4099", "300x200:w.layout=padded",
                         {"64x96:y.dt=f32", {DType::f16, DType::bf16}}};
  // Llama-3-8B's FFN projections at decode: one token, and a batch of 8.
  spec.bench_problems = {"14336x4096", "4096x14336", "14336x4096:batch=8", "4096x14336:batch=8"};
  spec.signature = gemv_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::gemv_desc(p);
    return d ? ops::gemm_flops(*d) : 0.0;
  };
  spec.dot_product_error = [](const Problem& p, size_t) {
    auto d = ops::gemv_desc(p);
    return d ? ops::gemm_error(*d) : DotProductError{};
  };
  spec.reference = reference::gemv;
  return spec;
}

DNNB_REGISTER(register_op(make_gemv_spec()));

}  // namespace
}  // namespace dnnb
