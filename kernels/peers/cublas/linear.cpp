// cuBLAS linear: y = x @ w^T (+ b) as cublasGemmEx, w [N, K] read as the transposed K x N
// operand; a bias on an f16/bf16 y through cublasLtMatmul's bias epilogue, on an f32 y through
// a first K = 1 product and beta = 1 (cublas_common.h says why).
#include "kernels/peers/cublas/cublas_common.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cublas_peer {
namespace {

Status run_linear(OpCall& call) {
  auto device = device_of(call);
  if (!device) return device.status();
  auto d = ops::linear_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != (d->bias ? 3u : 2u) || call.outputs.size() != 1)
    return Status::bad_input(std::string("cublas linear: expected inputs x, w") + (d->bias ? ", b" : "") +
                             " and output y");
  const DType in = call.problem.dtype;
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (x.dtype != in || w.dtype != in) return Status::bad_input("cublas linear: x and w must be the problem dtype");
  DNNB_TRY(expect_output(y, in));
  if (x.shape != Shape{d->m, d->k} || w.shape != Shape{d->n, d->k} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cublas linear: operands " + x.describe() + ", " + w.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  Product p = x_times_w_transposed(in, d->m, d->n, d->k, x, w, y);
  if (d->bias) {
    const Tensor& bias = call.inputs[2];
    if (bias.dtype != in || bias.shape != Shape{d->n})
      return Status::bad_input("cublas linear: bias " + bias.describe() + " is not [" + std::to_string(d->n) + "] " +
                               dtype_name(in));
    if (d->n > 1 && bias.strides[0] != 1)
      return Status::unsupported("cublas linear: the bias needs unit stride, got " + bias.describe());
    p.bias = data_of(bias);
  }
  return run_product(**device, call, p);
}

// cuBLASLt's bias epilogue adds the bias to the product already rounded to the f16/bf16 output
// (so does torch's own CPU linear: its error on the `bias` fixture is 0.059): two roundings, which
// the single-rounding bound of the dot_product class does not allow on rows where the bias and
// the product cancel.
DNNB_REGISTER(register_op("linear", "bf16_tensor", run_linear,
                          {{"linear:*16:*bias=1*", "cuBLASLt's bias epilogue rounds the product to the 16-bit output "
                                                    "before adding the bias (two roundings; torch's CPU linear does the same)"}}));

}  // namespace
}  // namespace dnnb::cublas_peer
