// linear on OpenCL: y = x @ w^T (+ b), through the tiled GEMM (gemm.cl) with w [N, K] passed
// as B (K x N) by swapping its strides: no transposed copy of the weight.
#include "kernels/opencl/gemm.h"

namespace dnnb::opencl {
namespace {

Status run_linear(OpCall& call) {
  auto desc = ops::linear_desc(call.problem);
  if (!desc) return desc.status();
  if (call.inputs.size() != (desc->bias ? 3u : 2u) || call.outputs.size() != 1)
    return Status::bad_input("linear: expects inputs (x, w[, b]) and one output (y)");
  const Tensor* bias = desc->bias ? &call.inputs[2] : nullptr;
  return run_gemm(call, *desc, matrix_view(call.inputs[0]), transposed(matrix_view(call.inputs[1])), bias,
                  matrix_view(call.outputs[0]), "linear");
}

bool register_linear() { return register_opencl("linear", float_dtypes(), run_linear); }

}  // namespace
DNNB_REGISTER(register_linear());
}  // namespace dnnb::opencl
