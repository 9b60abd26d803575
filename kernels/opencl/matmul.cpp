// matmul on OpenCL: y = a @ b, batched over a leading dim, through the tiled GEMM (gemm.cl).
// a [B?, M, K] and b [B?, K, N] are read through their strides (transposed or padded storage
// needs no copy); y is of the problem dtype or f32 (y.dt=f32). tf32=1 is computed in full f32,
// which that mode allows.
#include "kernels/opencl/gemm.h"

namespace dnnb::opencl {
namespace {

Status run_matmul(OpCall& call) {
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("matmul: expects inputs (a, b) and one output (y)");
  auto desc = ops::matmul_desc(call.problem);
  if (!desc) return desc.status();
  return run_gemm(call, *desc, matrix_view(call.inputs[0]), matrix_view(call.inputs[1]), nullptr,
                  matrix_view(call.outputs[0]), "matmul");
}

bool register_matmul() { return register_opencl("matmul", float_dtypes(), run_matmul); }

}  // namespace
DNNB_REGISTER(register_matmul());
}  // namespace dnnb::opencl
