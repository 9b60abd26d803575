// cuBLAS matmul: y[b] = a[b] @ b[b] as one cublasGemmEx (or cublasGemmStridedBatchedEx for a
// batch); either operand transposed or with padded rows (a leading dim); cublas_common.h has
// the mapping and the numerics.
#include "kernels/peers/cublas/cublas_common.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cublas_peer {
namespace {

Status run_matmul(OpCall& call) {
  auto device = device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cublas matmul: expected inputs a, b and output y");
  const DType in = call.problem.dtype;
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (a.dtype != in || b.dtype != in) return Status::bad_input("cublas matmul: a and b must be the problem dtype");
  DNNB_TRY(expect_output(y, in));
  const bool batched = call.problem.shape.size() == 4;
  auto dims = [&](int64_t r, int64_t c) { return batched ? Shape{d->batch, r, c} : Shape{r, c}; };
  if (a.shape != dims(d->m, d->k) || b.shape != dims(d->k, d->n) || y.shape != dims(d->m, d->n))
    return Status::bad_input("cublas matmul: operands " + a.describe() + ", " + b.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  const int r = batched ? 1 : 0;  // the first matrix dim
  Product p;
  p.in_dtype = in;
  p.out_dtype = y.dtype;
  p.batch = d->batch;
  p.m = d->m;
  p.n = d->n;
  p.k = d->k;
  p.a = data_of(a);
  p.a_batch = batched ? a.strides[0] : 0;
  p.a_m = a.strides[r];
  p.a_k = a.strides[r + 1];
  p.b = data_of(b);
  p.b_batch = batched ? b.strides[0] : 0;
  p.b_k = b.strides[r];
  p.b_n = b.strides[r + 1];
  p.y = data_of(y);
  p.y_batch = batched ? y.strides[0] : 0;
  p.y_m = y.strides[r];
  p.tf32 = d->tf32;
  return run_product(**device, call, p);
}

DNNB_REGISTER(register_op("matmul", "bf16_tensor", run_matmul));

}  // namespace
}  // namespace dnnb::cublas_peer
