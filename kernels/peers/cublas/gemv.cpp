// cuBLAS gemv: y [B, N] = x [B, K] @ w^T for B = 1..16 vectors, as one cublasGemmEx (the
// product linear computes, M = B); cuBLAS picks its own matrix-vector kernels for small B.
#include "kernels/peers/cublas/cublas_common.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cublas_peer {
namespace {

Status run_gemv(OpCall& call) {
  auto device = device_of(call);
  if (!device) return device.status();
  auto d = ops::gemv_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cublas gemv: expected inputs w, x and output y");
  const DType in = call.problem.dtype;
  const Tensor& w = call.inputs[0];
  const Tensor& x = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (w.dtype != in || x.dtype != in) return Status::bad_input("cublas gemv: w and x must be the problem dtype");
  DNNB_TRY(expect_output(y, in));
  if (w.shape != Shape{d->n, d->k} || x.shape != Shape{d->m, d->k} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cublas gemv: operands " + w.describe() + ", " + x.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  Product p = x_times_w_transposed(in, d->m, d->n, d->k, x, w, y);
  return run_product(**device, call, p);
}

DNNB_REGISTER(register_op("gemv", "f32_fma", run_gemv));

}  // namespace
}  // namespace dnnb::cublas_peer
