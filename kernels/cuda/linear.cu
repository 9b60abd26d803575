// CUDA linear: y = x @ w^T (+ b) (F.linear), x [M, K], w [N, K] as HF models store it, b [N]
// when bias=1; any strides; f32 accumulation, the bias added to the f32 sum before the one
// rounding to y's dtype (the input dtype or f32, y.dt=f32). The GEMM engine (gemm.cuh) sees w
// as the K x N operand B with its strides swapped: w's unit stride along K makes B "k inner".
#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels {
namespace {

Status run_linear(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::linear_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != (d->bias ? 3u : 2u) || call.outputs.size() != 1)
    return Status::bad_input(std::string("cuda linear: expected inputs x, w") + (d->bias ? ", b" : "") +
                             " and output y");
  const DType in = call.problem.dtype;
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(x, in, "x"));
  DNNB_TRY(expect_tensor(w, in, "w"));
  DNNB_TRY(expect_product_output(y, in));
  if (x.shape != Shape{d->m, d->k} || w.shape != Shape{d->n, d->k} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cuda linear: operands " + x.describe() + ", " + w.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  const MatrixStrides sx = matrix_strides(x), sw = matrix_strides(w), sy = matrix_strides(y);
  GemmCall g;
  g.in_dtype = in;
  g.out_dtype = y.dtype;
  g.m = d->m;
  g.n = d->n;
  g.k = d->k;
  g.a = data_ptr<unsigned char>(x);
  g.a_m = sx.row;
  g.a_k = sx.col;
  g.b = data_ptr<unsigned char>(w);
  g.b_k = sw.col;
  g.b_n = sw.row;
  g.y = data_ptr<unsigned char>(y);
  g.y_m = sy.row;
  if (d->bias) {
    const Tensor& bias = call.inputs[2];
    DNNB_TRY(expect_tensor(bias, in, "b"));
    if (bias.shape != Shape{d->n})
      return Status::bad_input("cuda linear: bias " + bias.describe() + " is not [" + std::to_string(d->n) + "]");
    g.bias = data_ptr<unsigned char>(bias);
    g.bias_stride = bias.strides[0];
  }
  return launch_gemm(**device, g);
}

// compute_unit: the tensor-core ceilings, per dtype (register_product: bf16_tensor or f16_tensor;
// f32 problems run on the FMA units, tf32=1 on the tf32 tensor cores).
ProductImplementation linear_implementation() {
  ProductImplementation p;
  p.op = "linear";
  p.compute_unit = "bf16_tensor";
  p.run = run_linear;
  return p;
}

DNNB_REGISTER(register_product(linear_implementation()));

}  // namespace
}  // namespace dnnb::cuda_kernels
