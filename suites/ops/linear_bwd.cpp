// linear_bwd: the gradients of y = x @ w^T (+ b) (F.linear) for the incoming gradient dy:
//   dx = dy w,  dw = dy^T x,  db = sum of dy over the rows (bias=1 only).
// torch: torch.autograd.grad(F.linear(x, w, b), (x, w, b), dy). Inputs x [M, K] or [B, M, K],
// w [N, K] (HF layout), dy [M, N] or [B, M, N]; outputs dx (x's shape), dw [N, K] and db [N],
// each in the problem dtype, as torch's autograd gives them. A 3-D x's rows are tokens: dw and db
// sum over all B M of them. Accumulation is f32; each output is rounded once.
// Tolerance class dot_product: dx sums N products, dw B M products, db B M terms.
// FLOP model: 2 x 2 B M N K (the two products), plus B M N for db.
#include "reference/linear_bwd.h"
#include "reference/register.h"
#include "suites/ops/gemm_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

// A 3-D x or dy is read as B M rows (tokens) by every kernel, which needs one row stride across
// the batch: padded rows keep it, a transposed [M, K] inside each batch item does not.
Status check_batched_layouts(const Problem& p, const ops::GemmDesc& d) {
  if (p.shape.size() != 4) return Status::ok();
  for (const char* key : {"layout", "x.layout", "dy.layout"})
    if (p.get(key, "") == "transposed")
      return Status::bad_input("linear_bwd: parameter " + std::string(key) +
                               "=transposed needs a 2-D operand (shape MxNxK); a 3-D x or dy of " +
                               std::to_string(d.batch) + " batch items is read as rows of tokens");
  return Status::ok();
}

Result<Signature> linear_bwd_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"bias"}, 3));
  auto d = ops::linear_bwd_desc(p);
  if (!d) return d.status();
  DNNB_TRY(check_batched_layouts(p, *d));
  const bool batched = p.shape.size() == 4;
  const Shape x_shape = batched ? Shape{d->batch, d->m, d->k} : Shape{d->m, d->k};
  const Shape dy_shape = batched ? Shape{d->batch, d->m, d->n} : Shape{d->m, d->n};
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, x_shape), ops::tensor_spec("w", p.dtype, {d->n, d->k}),
                ops::tensor_spec("dy", p.dtype, dy_shape)};
  sig.outputs = {ops::tensor_spec("dx", p.dtype, x_shape), ops::tensor_spec("dw", p.dtype, {d->n, d->k})};
  if (d->bias) sig.outputs.push_back(ops::tensor_spec("db", p.dtype, {d->n}));
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_linear_bwd_spec() {
  OpSpec spec = ops::op_spec("2", "linear_bwd", "torch.autograd.grad(F.linear(x, w, b), (x, w, b), dy)",
                             ops::float_dtypes(), ToleranceClass::dot_product);
  // Odd sizes off every tile, one token, a 3-D x, long reductions for dw (4096 rows) and dx
  // (N = 4096), and each operand transposed or padded.
  spec.check_problems = {"8x16x32",
                         "17x31x45:bias=1",
                         "1x96x200:bias=1",
                         "3x7x33x40:bias=1",
                         "2x50x70x90:bias=1,dy.layout=padded,x.layout=padded",
                         "12x20x28:bias=1,x.layout=transposed",
                         "24x40x56:dy.layout=transposed,w.layout=transposed",
                         "100x300x1000:bias=1",
                         "64x128x256",
                         "4096x33x65:bias=1",
                         "2x1024x48x72:bias=1",
                         "33x4096x65"};
  // Llama-3-8B's projections (hidden 4096, FFN 14336) at 8192 tokens, as one training step's
  // backward runs them: up/gate (4096 -> 14336), down (14336 -> 4096) and attention (4096 -> 4096).
  spec.bench_problems = {"8192x14336x4096", "8192x4096x14336", "8192x4096x4096", "8192x4096x4096:bias=1"};
  spec.signature = linear_bwd_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::linear_bwd_desc(p);
    if (!d) return 0.0;
    const double rows = static_cast<double>(d->batch) * static_cast<double>(d->m);
    const double mn = rows * static_cast<double>(d->n);
    return 4.0 * mn * static_cast<double>(d->k) + (d->bias ? mn : 0.0);
  };
  // dx sums over the N outputs, dw and db over the B M rows.
  spec.dot_product_error = [](const Problem& p, size_t index) {
    auto d = ops::linear_bwd_desc(p);
    if (!d) return DotProductError{};
    return DotProductError{index == 0 ? d->n : d->batch * d->m};
  };
  spec.reference = reference::linear_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_linear_bwd_spec()));

}  // namespace
}  // namespace dnnb
