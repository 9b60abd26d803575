// CUDA matmul_i8: y = torch._int_mm(a, b), a i8 [M, K] and b i8 [K, N] at any strides (either
// transposed or padded), y i32 [M, N], the exact sums. gemm8_mma.cuh's run_gemm8 picks the
// kernel: wgmma m64n256k32 (s32 accumulators) on Hopper for M, N >= 64, packing a row-major b
// (or an a TMA cannot read) K-contiguous into the workspace first; mma.sync m16n8k32 for the rest.
#include "kernels/cuda/gemm8_mma.cuh"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::cuda_kernels {
namespace {

Status run_matmul_i8(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_i8_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda matmul_i8: expected inputs a, b and output y");
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(a, DType::i8, "a"));
  DNNB_TRY(expect_tensor(b, DType::i8, "b"));
  DNNB_TRY(expect_tensor(y, DType::i32, "y"));
  if (a.shape != Shape{d->m, d->k} || b.shape != Shape{d->k, d->n} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cuda matmul_i8: operands " + a.describe() + ", " + b.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  if (d->n > 1 && y.strides[1] != 1)
    return Status::unsupported("cuda matmul_i8: y must have unit stride along its last dim, got " + y.describe());
  Gemm8Call c;
  c.a_dtype = c.b_dtype = DType::i8;
  c.out_dtype = DType::i32;
  c.m = d->m;
  c.n = d->n;
  c.k = d->k;
  c.a = data_ptr<int8_t>(a);
  c.a_m = a.strides[0];
  c.a_k = a.strides[1];
  c.b = data_ptr<int8_t>(b);
  c.b_k = b.strides[0];
  c.b_n = b.strides[1];
  c.y = data_ptr<int32_t>(y);
  c.y_m = y.strides[0];
  return run_gemm8<int8_t, int8_t>(**device, c, call.workspace);
}

DNNB_REGISTER(register_gemm8("matmul_i8", DType::i8, "i8_tensor", run_matmul_i8, ops::matmul_i8_desc));

}  // namespace
}  // namespace dnnb::cuda_kernels
