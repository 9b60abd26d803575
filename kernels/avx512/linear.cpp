// linear: y = x @ w^T (+ b) through the GEMM engine (gemm.h): w [N, K] is read as the K x N
// operand b with its strides swapped, so a row-major w (as models store it) is packed
// through the engine's column-major path; x and w may be transposed or padded views. The
// bias is added to the f32 sums before y is rounded once. bf16 uses AMX tiles where the CPU
// and OS allow them, else VDPBF16PS where the CPU has it (gemm.h: has_amx_bf16); the variant
// fma converts bf16 to f32 instead.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/gemm.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::avx512 {
namespace {

Status linear_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::linear_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_linear(OpCall& call, bool bf16_pairs) {
  auto d = ops::linear_desc(call.problem);
  if (!d) return d.status();
  Tensor& y = call.outputs.at(0);
  if (y.strides.back() != 1) return Status::unsupported("avx512 linear: y's columns are not unit-stride");
  GemmCall g;
  g.m = d->m;
  g.n = d->n;
  g.k = d->k;
  g.a = matrix_view(call.inputs.at(0));
  g.b = matrix_view(call.inputs.at(1), /*transposed=*/true);
  g.y = y.host_data();
  g.y_dtype = y.dtype;
  g.y_row_stride = matrix_view(y).row_stride;
  if (d->bias) {
    const Tensor& bias = call.inputs.at(2);
    g.bias = bias.host_data();
    if (g.bias == nullptr) return Status::bad_input("avx512 linear: b is not in host memory");
    g.bias_dtype = bias.dtype;
    g.bias_stride = bias.strides.at(0);
  }
  g.bf16_pairs = bf16_pairs;
  g.amx = bf16_pairs;
  return gemm(g);
}

DNNB_REGISTER(register_kernel("linear", {DType::f32, DType::f16, DType::bf16}, linear_supports,
                              [](OpCall& call) { return run_linear(call, true); }, "", "",
                              bf16_pairs_unit));
DNNB_REGISTER(register_kernel("linear", {DType::bf16}, linear_supports, [](OpCall& call) { return run_linear(call, false); },
                              "fma", kBf16FmaWhen));

}  // namespace
}  // namespace dnnb::avx512
