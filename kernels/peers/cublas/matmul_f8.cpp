// cuBLAS matmul_f8: y = torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=y.dt) as one
// cuBLASLt FP8 product (lt8.h): per-tensor scales through the A/B scale pointers, row-wise ones
// as outer-vector scales. cuBLASLt's FP8 kernels want a and b K-contiguous (b.layout=transposed,
// as torch requires); other layouts are unsupported when its heuristic has no algorithm.
#include "kernels/peers/cublas/lt8.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::cublas_peer {
namespace {

Status run_matmul_f8(OpCall& call) {
  auto device = device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_f8_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 4 || call.outputs.size() != 1)
    return Status::bad_input("cublas matmul_f8: expected inputs a, b, scale_a, scale_b and output y");
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& sa = call.inputs[2];
  const Tensor& sb = call.inputs[3];
  const Tensor& y = call.outputs[0];
  const int64_t m = d->gemm.m, n = d->gemm.n, k = d->gemm.k;
  const bool row = d->scale == ops::F8Scale::row;
  if (a.dtype != d->a || b.dtype != d->b || sa.dtype != DType::f32 || sb.dtype != DType::f32 || y.dtype != d->y)
    return Status::bad_input("cublas matmul_f8: operand dtypes " + a.describe() + ", " + b.describe() + ", " +
                             sa.describe() + ", " + sb.describe() + ", " + y.describe() + " do not match " +
                             call.problem.to_string());
  if (a.shape != Shape{m, k} || b.shape != Shape{k, n} || y.shape != Shape{m, n} ||
      sa.shape != (row ? Shape{m, 1} : Shape{1}) || sb.shape != (row ? Shape{1, n} : Shape{1}))
    return Status::bad_input("cublas matmul_f8: operands " + a.describe() + ", " + b.describe() + ", " +
                             sa.describe() + ", " + sb.describe() + ", " + y.describe() + " do not match " +
                             call.problem.to_string());
  if (n > 1 && y.strides[1] != 1)
    return Status::unsupported("cublas: y must have unit stride along its last dim, got " + y.describe());
  if (row && ((m > 1 && sa.strides[0] != 1) || (n > 1 && sb.strides[1] != 1)))
    return Status::unsupported("cublas: outer-vector scales must be contiguous, got " + sa.describe() + ", " +
                               sb.describe());
  Product8 p;
  p.a_dtype = d->a;
  p.b_dtype = d->b;
  p.out_dtype = d->y;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = data_of(a);
  p.a_m = a.strides[0];
  p.a_k = a.strides[1];
  p.b = data_of(b);
  p.b_k = b.strides[0];
  p.b_n = b.strides[1];
  p.y = data_of(y);
  p.y_m = y.strides[0];
  p.scale_a = static_cast<const float*>(data_of(sa));
  p.scale_b = static_cast<const float*>(data_of(sb));
  p.row_scales = row;
  return run_product8(**device, call, p);
}

DNNB_REGISTER(register_op8("matmul_f8", DType::f8_e4m3fn, "fp8_tensor", run_matmul_f8));

}  // namespace
}  // namespace dnnb::cublas_peer
