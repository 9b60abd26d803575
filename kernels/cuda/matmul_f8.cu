// CUDA matmul_f8: y = torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=y.dt), a [M, K] and
// b [K, N] in f8_e4m3fn (one of them may be f8_e5m2) at any strides, f32 scales per tensor ([1])
// or per row of a ([M, 1]) and column of b ([1, N]), y bf16, f16 or f32: the f32 sum times
// scale_a * scale_b, rounded once. gemm8_mma.cuh's run_gemm8 picks the kernel: wgmma m64n128k32
// (f32, each k tile of 128 promoted to f32 registers) on Hopper for M, N >= 64, packing an
// operand TMA cannot read (a row-major b) K-contiguous into the workspace first; mma.sync
// m16n8k32 (sm_89 and later) for the rest.
#include "kernels/cuda/gemm8_mma.cuh"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::cuda_kernels {
namespace {

Status run_matmul_f8(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_f8_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 4 || call.outputs.size() != 1)
    return Status::bad_input("cuda matmul_f8: expected inputs a, b, scale_a, scale_b and output y");
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& sa = call.inputs[2];
  const Tensor& sb = call.inputs[3];
  const Tensor& y = call.outputs[0];
  const int64_t m = d->gemm.m, n = d->gemm.n, k = d->gemm.k;
  const bool row = d->scale == ops::F8Scale::row;
  DNNB_TRY(expect_tensor(a, d->a, "a"));
  DNNB_TRY(expect_tensor(b, d->b, "b"));
  DNNB_TRY(expect_tensor(sa, DType::f32, "scale_a"));
  DNNB_TRY(expect_tensor(sb, DType::f32, "scale_b"));
  DNNB_TRY(expect_tensor(y, d->y, "y"));
  if (a.shape != Shape{m, k} || b.shape != Shape{k, n} || y.shape != Shape{m, n} ||
      sa.shape != (row ? Shape{m, 1} : Shape{1}) || sb.shape != (row ? Shape{1, n} : Shape{1}))
    return Status::bad_input("cuda matmul_f8: operands " + a.describe() + ", " + b.describe() + ", " + sa.describe() +
                             ", " + sb.describe() + ", " + y.describe() + " do not match " +
                             call.problem.to_string());
  if (n > 1 && y.strides[1] != 1)
    return Status::unsupported("cuda matmul_f8: y must have unit stride along its last dim, got " + y.describe());
  Gemm8Call c;
  c.a_dtype = d->a;
  c.b_dtype = d->b;
  c.out_dtype = d->y;
  c.m = m;
  c.n = n;
  c.k = k;
  c.a = data_ptr<uint8_t>(a);
  c.a_m = a.strides[0];
  c.a_k = a.strides[1];
  c.b = data_ptr<uint8_t>(b);
  c.b_k = b.strides[0];
  c.b_n = b.strides[1];
  c.y = data_ptr<unsigned char>(y);
  c.y_m = y.strides[0];
  c.scale_a = data_ptr<float>(sa);
  c.scale_a_stride = row ? sa.strides[0] : 0;
  c.scale_b = data_ptr<float>(sb);
  c.scale_b_stride = row ? sb.strides[1] : 0;
  using E4 = gemm8::E4M3;
  using E5 = gemm8::E5M2;
  const bool a4 = d->a == DType::f8_e4m3fn, b4 = d->b == DType::f8_e4m3fn;
  if (a4 && b4) return run_gemm8<E4, E4>(**device, c, call.workspace);
  if (a4) return run_gemm8<E4, E5>(**device, c, call.workspace);
  if (b4) return run_gemm8<E5, E4>(**device, c, call.workspace);
  return Status::bad_input("cuda matmul_f8: a.dt=f8_e5m2 with b.dt=f8_e5m2 is not a matmul_f8 product");
}

DNNB_REGISTER(register_gemm8("matmul_f8", DType::f8_e4m3fn, "fp8_tensor", run_matmul_f8,
                             [](const Problem& p) -> Result<ops::GemmDesc> {
                               auto d = ops::matmul_f8_desc(p);
                               if (!d) return d.status();
                               return d->gemm;
                             }));

}  // namespace
}  // namespace dnnb::cuda_kernels
