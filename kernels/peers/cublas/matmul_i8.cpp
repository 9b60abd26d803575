// cuBLAS matmul_i8: y = torch._int_mm(a, b) as one cuBLASLt s8 x s8 -> s32 product (lt8.h).
// cuBLASLt's int8 kernels want a and b K-contiguous (b.layout=transposed); other layouts are
// unsupported when its heuristic has no algorithm for them.
#include "kernels/peers/cublas/lt8.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::cublas_peer {
namespace {

Status run_matmul_i8(OpCall& call) {
  auto device = device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_i8_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cublas matmul_i8: expected inputs a, b and output y");
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (a.dtype != DType::i8 || b.dtype != DType::i8 || y.dtype != DType::i32)
    return Status::bad_input("cublas matmul_i8: a and b must be i8 and y i32, got " + a.describe() + ", " +
                             b.describe() + ", " + y.describe());
  if (a.shape != Shape{d->m, d->k} || b.shape != Shape{d->k, d->n} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cublas matmul_i8: operands " + a.describe() + ", " + b.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  if (d->n > 1 && y.strides[1] != 1)
    return Status::unsupported("cublas: y must have unit stride along its last dim, got " + y.describe());
  Product8 p;
  p.m = d->m;
  p.n = d->n;
  p.k = d->k;
  p.a = data_of(a);
  p.a_m = a.strides[0];
  p.a_k = a.strides[1];
  p.b = data_of(b);
  p.b_k = b.strides[0];
  p.b_n = b.strides[1];
  p.y = data_of(y);
  p.y_m = y.strides[0];
  return run_product8(**device, call, p);
}

DNNB_REGISTER(register_op8("matmul_i8", DType::i8, "i8_tensor", run_matmul_i8));

}  // namespace
}  // namespace dnnb::cublas_peer
