// CUDA matmul: y[b] = a[b] @ b[b] (torch.matmul), a [B?, M, K] and b [B?, K, N] at any strides
// (either transposed or padded), f32 accumulation, y of the input dtype or f32 (y.dt=f32).
// The GEMM engine (gemm.cuh) picks the kernel: mma.sync on the tensor cores for f16/bf16 (a
// cp.async pipeline when both operands have a unit stride and 16-byte aligned rows, element
// loads otherwise), full-f32 FMA for f32, mma.sync tf32 for f32 with tf32=1.
#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels {
namespace {

Status run_matmul(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda matmul: expected inputs a, b and output y");
  const DType in = call.problem.dtype;
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(a, in, "a"));
  DNNB_TRY(expect_tensor(b, in, "b"));
  DNNB_TRY(expect_product_output(y, in));
  const bool batched = call.problem.shape.size() == 4;
  auto dims = [&](int64_t r, int64_t c) { return batched ? Shape{d->batch, r, c} : Shape{r, c}; };
  if (a.shape != dims(d->m, d->k) || b.shape != dims(d->k, d->n) || y.shape != dims(d->m, d->n))
    return Status::bad_input("cuda matmul: operands " + a.describe() + ", " + b.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  const MatrixStrides sa = matrix_strides(a), sb = matrix_strides(b), sy = matrix_strides(y);
  GemmCall g;
  g.in_dtype = in;
  g.out_dtype = y.dtype;
  g.batch = d->batch;
  g.m = d->m;
  g.n = d->n;
  g.k = d->k;
  g.a = data_ptr<unsigned char>(a);
  g.a_batch = sa.batch;
  g.a_m = sa.row;
  g.a_k = sa.col;
  g.b = data_ptr<unsigned char>(b);
  g.b_batch = sb.batch;
  g.b_k = sb.row;
  g.b_n = sb.col;
  g.y = data_ptr<unsigned char>(y);
  g.y_batch = sy.batch;
  g.y_m = sy.row;
  g.tf32 = d->tf32;
  return launch_gemm(**device, g);
}

// compute_unit: the tensor-core ceilings, per dtype (register_product: bf16_tensor or f16_tensor;
// f32 problems run on the FMA units, tf32=1 on the tf32 tensor cores).
ProductImplementation matmul_implementation() {
  ProductImplementation p;
  p.op = "matmul";
  p.compute_unit = "bf16_tensor";
  p.run = run_matmul;
  return p;
}

DNNB_REGISTER(register_product(matmul_implementation()));

}  // namespace
}  // namespace dnnb::cuda_kernels
