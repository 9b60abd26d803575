// matmul: y = a @ b, batched over a leading dim; torch.matmul(a, b).
// Inputs a [B?, M, K], b [B?, K, N] (either may be stored transposed: a.layout=transposed,
// b.layout=transposed); output y [B?, M, N], of the problem dtype or, for f16/bf16 inputs,
// f32 (y.dt=f32). Accumulation is f32. tf32=1 (f32 problems) lets the kernel round a and b
// to tf32 first, as torch.backends.cuda.matmul.allow_tf32 does.
// Tolerance class dot_product: each output sums K products (core/compare.h).
// FLOP model: 2 B M N K.
#include "reference/matmul.h"
#include "reference/register.h"
#include "suites/ops/gemm_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> matmul_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"tf32"}, 3));
  auto d = ops::matmul_desc(p);
  if (!d) return d.status();
  const bool batched = p.shape.size() == 4;
  auto dims = [&](int64_t r, int64_t c) { return batched ? Shape{d->batch, r, c} : Shape{r, c}; };
  Signature sig;
  sig.inputs = {ops::tensor_spec("a", p.dtype, dims(d->m, d->k)), ops::tensor_spec("b", p.dtype, dims(d->k, d->n))};
  sig.outputs = {ops::product_output(p, dims(d->m, d->n))};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_matmul_spec() {
  OpSpec spec = ops::op_spec("2", "matmul", "torch.matmul(a, b)", ops::float_dtypes(), ToleranceClass::dot_product);
  spec.check_problems = {"1x1x1", "17x13x1", "31x37x41", "1x257x129", "128x128x128", "256x512x384",
                         "3x33x65x47", "2x128x64x256:b.layout=transposed",
                         "40x24x56:a.layout=transposed", "40x24x56:b.layout=transposed",
                         "40x24x56:a.layout=transposed,b.layout=transposed", "16x24x40:a.layout=padded,b.layout=padded",
                         // K long enough that an f16 or bf16 accumulator fails the f32 bound.
                         "16x16x16384", "64x64x4099",
                         {"24x40x56:y.dt=f32", {DType::f16, DType::bf16}},
                         {"64x96x128:tf32=1", {DType::f32}}};
  spec.bench_problems = {"8192x8192x8192", "4096x4096x4096", {"4096x4096x4096:tf32=1", {DType::f32}}};
  spec.signature = matmul_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::matmul_desc(p);
    return d ? ops::gemm_flops(*d) : 0.0;
  };
  spec.dot_product_error = [](const Problem& p, size_t) {
    auto d = ops::matmul_desc(p);
    return d ? ops::gemm_error(*d) : DotProductError{};
  };
  spec.reference = reference::matmul;
  return spec;
}

DNNB_REGISTER(register_op(make_matmul_spec()));

}  // namespace
}  // namespace dnnb
