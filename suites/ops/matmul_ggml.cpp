// matmul_ggml: y[M, N] = x[M, K] times w[N, K]^T as ggml's mul_mat computes it for a q8_0 or
// q4_0 weight (the problem's dtype; w's rows are the output features, ggml's src0), with
// ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0: each row of x (f32, or f16/bf16 with
// x.dt=, widened exactly) is quantised to q8_0 as quantize_row_q8_0_ref does, then per 32-value
// block an integer dot of the quants (exact) times d_w x d_x, summed in f32 over the blocks.
// y is f32. docs/ops-family4.md, "matmul_ggml".
// Tolerance class dot_product over K / 32 terms: the quantisation and the integer dots are
// exact and the same on every backend; what varies is the rounding of each block's f32 term
// and the order of their f32 sum, a dot product of length K / 32 (the reference is float64
// over the same quantised values).
// FLOP model: 2 M N K. Bytes: w's blocks, x and y, each once.
#include "reference/matmul_ggml.h"
#include "reference/register.h"
#include "suites/ops/matmul_ggml_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> matmul_ggml_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::matmul_ggml_dtypes(), {"zeros", "xscale", "wscale"}));
  auto d = ops::matmul_ggml_desc(p);
  if (!d) return d.status();
  Signature sig;
  TensorSpec x = ops::tensor_spec("x", DType::f32, {d->m, d->k});
  x.dtype_choices = {DType::f16, DType::bf16};
  sig.inputs = {ops::tensor_spec("w", p.dtype, {d->n, d->k}), x};
  sig.outputs = {ops::tensor_spec("y", DType::f32, {d->m, d->n})};
  return sig;
}

OpSpec make_matmul_ggml_spec() {
  OpSpec spec = ops::op_spec("4", "matmul_ggml",
                             "ggml_mul_mat(w, x): ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0 over x quantised to q8_0",
                             ops::matmul_ggml_dtypes(), ToleranceClass::dot_product);
  // Decode (M = 1, 3, 8), a row count past every kernel's row tile (33), one block (K = 32), K
  // an odd number of blocks past 4096 (4128 = 129 blocks), N odd, zero blocks in w and x,
  // large magnitudes (x's block scales near 2^11), f16/bf16 x, x transposed and padded; K a
  // multiple of 256 (whole 8-block groups, as every real model's rows) with M = 1, 2, 3, 4, 5 and
  // 8 and N no multiple of 32, one of them at large magnitudes, one at K = 14336 (a decode
  // problem's K) and one at M = 4 with K = 14336 (x's 64 KB of quants and scales staged whole).
  spec.check_problems = {"1x4096x4096",
                         "3x1001x4128",
                         "8x333x4128",
                         "33x257x1056",
                         "5x77x32",
                         "1x4097x32",
                         "8x129x2080:zeros=1",
                         "2x100x4128:wscale=1e3,xscale=3e5",
                         "9x71x544:x.dt=f16",
                         "7x45x320:x.layout=transposed",
                         "3x50x256:x.layout=padded",
                         "4x65x1024:x.dt=bf16,zeros=1",
                         "8x4001x2048",
                         "5x33x512:x.dt=f16",
                         "2x100x4096:wscale=1e3,xscale=3e5",
                         "1x1000x14336",
                         "3x77x2304",
                         "4x40x14336:x.dt=bf16"};
  // Llama-3-8B's FFN projections at decode (one token, a batch of 8) and one prefill of 512.
  spec.bench_problems = {"1x14336x4096", "1x4096x14336", "8x14336x4096", "8x4096x14336", "512x14336x4096"};
  spec.signature = matmul_ggml_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::matmul_ggml_desc(p);
    return d ? 2.0 * static_cast<double>(d->m) * static_cast<double>(d->n) * static_cast<double>(d->k) : 0.0;
  };
  spec.dot_product_error = [](const Problem& p, size_t) {
    auto d = ops::matmul_ggml_desc(p);
    return d ? DotProductError{d->blocks(), 0} : DotProductError{};
  };
  spec.fill_inputs = ops::fill_matmul_ggml_inputs;
  spec.reference = reference::matmul_ggml;
  return spec;
}

DNNB_REGISTER(register_op(make_matmul_ggml_spec()));

}  // namespace
}  // namespace dnnb
