// matmul_f8: y = torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=y.dt) (docs/ops-family4.md,
// "matmul_f8").
// Inputs a [M, K] and b [K, N] in f8_e4m3fn (a.dt=f8_e5m2 or b.dt=f8_e5m2 makes one of them
// e5m2), either stored transposed or padded (b.layout=transposed is torch's column-major b);
// scale_a, scale_b f32: [1] and [1] with scale=tensor (the default), [M, 1] and [1, N] with
// scale=row. Output y [M, N]: bf16, or y.dt=f16 / y.dt=f32 with tensor scales.
//   y[i, j] = scale_a[i] * scale_b[j] * sum_k a[i, k] b[k, j]
// Tolerance class dot_product: each element sums K products, exact in f32 (8-bit float products
// have at most 8 significant bits), accumulated in f32 except that runs of 128 products are
// summed first in the FP8 tensor core's narrower accumulator, as torch._scaled_mm's cuBLASLt
// does on Hopper (docs/conformance.md, "FP8 products"); then two f32 roundings (the scales'
// product and the scaling, 2 u together = one f32 eps) and the output's rounding, both inside
// the class's rtol of one eps of the output dtype (docs/ops-family4.md gives the argument).
// FLOP model: 2 M N K.
#include "reference/matmul_f8.h"
#include "reference/register.h"
#include "suites/ops/matmul_q_desc.h"
#include "suites/ops/op_common.h"

#include <cmath>
#include <cstring>

namespace dnnb {
namespace {

Result<Signature> matmul_f8_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, {DType::f8_e4m3fn}, {"scale"}, 3));
  auto d = ops::matmul_f8_desc(p);
  if (!d) return d.status();
  const int64_t m = d->gemm.m, n = d->gemm.n, k = d->gemm.k;
  const bool row = d->scale == ops::F8Scale::row;
  Signature sig;
  sig.inputs = {ops::tensor_spec("a", DType::f8_e4m3fn, {m, k}), ops::tensor_spec("b", DType::f8_e4m3fn, {k, n}),
                ops::tensor_spec("scale_a", DType::f32, row ? Shape{m, 1} : Shape{1}),
                ops::tensor_spec("scale_b", DType::f32, row ? Shape{1, n} : Shape{1})};
  // a.dt / b.dt: the descriptor refuses e5m2 x e5m2; the core applies the operand dtypes.
  sig.inputs[0].dtype_choices = {DType::f8_e5m2};
  sig.inputs[1].dtype_choices = {DType::f8_e5m2};
  TensorSpec y = ops::tensor_spec("y", DType::bf16, {m, n});
  if (!row) y.dtype_choices = {DType::f16, DType::f32};
  sig.outputs = {y};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

// The finite encodings of an 8-bit float format (e4m3fn: all but S.1111.111; e5m2: all but
// exponent 11111).
bool finite_code(DType dtype, uint8_t code) {
  return dtype == DType::f8_e4m3fn ? (code & 0x7F) != 0x7F : (code & 0x7C) != 0x7C;
}

// a and b: uniform over the format's finite encodings (so a few thousand elements hold every
// one, subnormals and the largest values included; no NaN or Inf). Scales bring each operand's
// rms to about 1: scale = u / rms, u uniform in [0.5, 2), one u per row of a and column of b
// with scale=row; so |y| stays near sqrt(K) and every output dtype holds it.
Status fill_matmul_f8_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
  if (inputs.size() != 4) return Status::bad_input("matmul_f8: four inputs (a, b, scale_a, scale_b) expected");
  double rms[2] = {0, 0};
  for (int t = 0; t < 2; ++t) {
    Tensor& x = inputs[t];
    auto* data = static_cast<uint8_t*>(x.host_data());
    double s = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      uint8_t code;
      do code = static_cast<uint8_t>(rng.next() >> 56);
      while (!finite_code(x.dtype, code));
      data[i] = code;
      const double v = load_element(data, x.dtype, i);
      s += v * v;
    }
    rms[t] = std::sqrt(s / static_cast<double>(x.numel()));
    if (!(rms[t] > 0)) rms[t] = 1;
  }
  for (int t = 0; t < 2; ++t) {
    Tensor& scale = inputs[2 + t];
    auto* data = static_cast<float*>(scale.host_data());
    for (int64_t i = 0; i < scale.numel(); ++i) data[i] = static_cast<float>(rng.uniform(0.5, 2.0) / rms[t]);
  }
  (void)p;
  return Status::ok();
}

OpSpec make_matmul_f8_spec() {
  OpSpec spec = ops::op_spec("4", "matmul_f8", "torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=y.dt)",
                             {DType::f8_e4m3fn}, ToleranceClass::dot_product);
  spec.check_problems = {"1x1x1", "17x13x1", "31x37x41", "1x257x129", "5x3x7", "128x128x128", "256x512x384",
                         // every finite e4m3fn encoding appears in a and in b
                         "64x64x256",
                         // K not a multiple of 16 or 32 (the fp8 MMA's depth)
                         "40x24x70", "33x65x67", "64x48x4099",
                         "24x40x67:b.layout=transposed", "40x24x56:a.layout=transposed",
                         "40x24x56:a.layout=transposed,b.layout=transposed", "16x24x40:a.layout=padded,b.layout=padded",
                         "130x96x200:b.layout=transposed",
                         "33x65x67:scale=row", "64x48x4099:b.layout=transposed,scale=row", "1x257x129:scale=row",
                         "24x40x56:y.dt=f32", "24x40x56:y.dt=f16", "130x96x200:b.layout=transposed,y.dt=f32",
                         "31x37x41:a.dt=f8_e5m2", "31x37x41:b.dt=f8_e5m2,y.dt=f32",
                         "64x64x256:a.dt=f8_e5m2,scale=row", "64x64x256:b.dt=f8_e5m2,b.layout=transposed",
                         "2000x16x96", "16x2000x96", "3000x3x64:scale=row",
                         "16x16x16384", "16x16x16384:b.layout=transposed,scale=row"};
  // torch._scaled_mm on CUDA takes b column-major: every bench problem has b.layout=transposed.
  spec.bench_problems = {"8192x8192x8192:b.layout=transposed", "8192x8192x8192:b.layout=transposed,scale=row",
                         "4096x4096x4096:b.layout=transposed",
                         // an LLM MLP at 4096 tokens (b = W^T): 4096 -> 14336 and 14336 -> 4096
                         "4096x14336x4096:b.layout=transposed,scale=row",
                         "4096x4096x14336:b.layout=transposed,scale=row"};
  spec.signature = matmul_f8_signature;
  spec.flops = [](const Problem& p) {
    auto d = ops::matmul_f8_desc(p);
    return d ? ops::gemm_flops(d->gemm) : 0.0;
  };
  spec.dot_product_error = [](const Problem& p, size_t) {
    auto d = ops::matmul_f8_desc(p);
    // Runs of 128 products in the FP8 tensor core's ~14-bit accumulator, each then added to f32
    // (cuBLASLt on Hopper, what torch._scaled_mm runs; docs/conformance.md, "FP8 products").
    return d ? DotProductError{d->gemm.k, 0.0, 128, 0x1p-14} : DotProductError{};
  };
  spec.fill_inputs = fill_matmul_f8_inputs;
  spec.reference = reference::matmul_f8;
  return spec;
}

DNNB_REGISTER(register_op(make_matmul_f8_spec()));

}  // namespace
}  // namespace dnnb
