// matmul: y[b] = a[b] @ b[b] through the GEMM engine (gemm.h), which reads both operands
// through their strides (a.layout / b.layout = transposed or padded are views, not copies)
// and accumulates in f32; y is f32, f16 or bf16 (y.dt=f32 for 16-bit inputs). tf32=1 is
// computed in full f32, which the mode allows (it only permits rounding the inputs).
// bf16 uses AMX tiles where the CPU and OS allow them, else VDPBF16PS where the CPU has it
// (gemm.h: has_amx_bf16); the variant fma converts bf16 to f32 instead.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/gemm.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::avx512 {
namespace {

Status matmul_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::matmul_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_matmul(OpCall& call, bool bf16_pairs) {
  auto d = ops::matmul_desc(call.problem);
  if (!d) return d.status();
  const Tensor& a = call.inputs.at(0);
  const Tensor& b = call.inputs.at(1);
  Tensor& y = call.outputs.at(0);
  if (y.strides.back() != 1) return Status::unsupported("avx512 matmul: y's columns are not unit-stride");
  GemmCall g;
  g.batch = d->batch;
  g.m = d->m;
  g.n = d->n;
  g.k = d->k;
  g.a = matrix_view(a);
  g.b = matrix_view(b);
  const MatrixView out = matrix_view(y);
  g.y = y.host_data();
  g.y_dtype = y.dtype;
  g.y_row_stride = out.row_stride;
  g.y_batch_stride = out.batch_stride;
  g.bf16_pairs = bf16_pairs;
  g.amx = bf16_pairs;
  return gemm(g);
}

DNNB_REGISTER(register_kernel("matmul", {DType::f32, DType::f16, DType::bf16}, matmul_supports,
                              [](OpCall& call) { return run_matmul(call, true); }, "", "",
                              bf16_pairs_unit));
DNNB_REGISTER(register_kernel("matmul", {DType::bf16}, matmul_supports, [](OpCall& call) { return run_matmul(call, false); },
                              "fma", kBf16FmaWhen));

}  // namespace
}  // namespace dnnb::avx512
