// The cuBLAS peer's 8-bit products (lt8.h): one cublasLtMatmul per call.
#include "kernels/peers/cublas/lt8.h"

#include <string>

namespace dnnb::cublas_peer {
namespace {

cudaDataType_t lt_type(DType dtype) {
  switch (dtype) {
    case DType::i8: return CUDA_R_8I;
    case DType::i32: return CUDA_R_32I;
    case DType::f8_e4m3fn: return CUDA_R_8F_E4M3;
    case DType::f8_e5m2: return CUDA_R_8F_E5M2;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    default: return CUDA_R_32F;
  }
}

const char* op_name(cublasOperation_t op) { return op == CUBLAS_OP_T ? "T" : "N"; }

}  // namespace

Status run_product8(const CudaDevice& device, OpCall& call, const Product8& p) {
  // C (N x M, column-major: y^T) = op(A') (N x K) op(B') (K x M), A' = b, B' = a.
  const auto b_view = transposed_view(p.k, p.n, p.b_k, p.b_n);
  if (!b_view)
    return Status::unsupported("cublas: operand b (" + std::to_string(p.k) + "x" + std::to_string(p.n) + ", strides " +
                               std::to_string(p.b_k) + "," + std::to_string(p.b_n) + ") has no leading dimension");
  const auto a_view = transposed_view(p.m, p.k, p.a_m, p.a_k);
  if (!a_view)
    return Status::unsupported("cublas: operand a (" + std::to_string(p.m) + "x" + std::to_string(p.k) + ", strides " +
                               std::to_string(p.a_m) + "," + std::to_string(p.a_k) + ") has no leading dimension");
  const int64_t ldc = p.m == 1 ? std::max<int64_t>(p.n, 1) : p.y_m;
  if (ldc < p.n) return Status::unsupported("cublas: y's row stride " + std::to_string(p.y_m) + " is below N");
  if (!fits_int({p.m, p.n, p.k, a_view->ld, b_view->ld, ldc}))
    return Status::unsupported("cublas: a dim or leading dim beyond 2^31 - 1");
  auto handle = lt_handle_of(device);
  if (!handle) return handle.status();
  const bool integer = p.a_dtype == DType::i8;
  const uint64_t m = static_cast<uint64_t>(p.n), n = static_cast<uint64_t>(p.m), k = static_cast<uint64_t>(p.k);

  LtDescs d;
  DNNB_CUBLAS_TRY(cublasLtMatmulDescCreate(&d.op, integer ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                           integer ? CUDA_R_32I : CUDA_R_32F));
  const int32_t trans_a = b_view->op, trans_b = a_view->op;
  DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)));
  DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof(trans_b)));
  if (!integer) {
    const void* scale_a = p.scale_b;  // cuBLAS's A is b
    const void* scale_b = p.scale_a;
    DNNB_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof(scale_a)));
    DNNB_CUBLAS_TRY(
        cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof(scale_b)));
    if (p.row_scales) {
      const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)));
      DNNB_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)));
    }
  }
  // Layouts of the operands as stored (column-major): an op-T operand is stored transposed.
  const bool a_t = b_view->op == CUBLAS_OP_T, b_t = a_view->op == CUBLAS_OP_T;
  DNNB_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.a, lt_type(p.b_dtype), a_t ? k : m, a_t ? m : k, b_view->ld));
  DNNB_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.b, lt_type(p.a_dtype), b_t ? n : k, b_t ? k : n, a_view->ld));
  DNNB_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&d.c, lt_type(p.out_dtype), m, n, ldc));

  uint64_t workspace_bytes = 0;
  void* workspace = nullptr;
  if (call.workspace.buffer && call.workspace.buffer->handle != nullptr) {
    workspace = data_of(call.workspace);
    workspace_bytes = storage_bytes(call.workspace.dtype, call.workspace.numel());
  }
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&d.pref));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_bytes, sizeof(workspace_bytes)));
  const uint32_t align_a = alignment_of(p.b), align_b = alignment_of(p.a), align_c = alignment_of(p.y);
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                                       sizeof(align_a)));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                                       sizeof(align_b)));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
                                                       sizeof(align_c)));
  DNNB_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
                                                       sizeof(align_c)));

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t asked =
      cublasLtMatmulAlgoGetHeuristic(*handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &heuristic, &found);
  if (asked == CUBLAS_STATUS_NOT_SUPPORTED || (asked == CUBLAS_STATUS_SUCCESS && found < 1))
    return Status::unsupported(std::string("cublas: cuBLASLt has no algorithm for ") + dtype_name(p.a_dtype) + " x " +
                               dtype_name(p.b_dtype) + " -> " + dtype_name(p.out_dtype) + " " + std::to_string(p.m) +
                               "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " with transa " +
                               op_name(b_view->op) + ", transb " + op_name(a_view->op) +
                               " (its 8-bit kernels want TN: a and b K-contiguous)" +
                               (p.row_scales ? ", outer-vector (row-wise) scales" : "") + ", alignments A " +
                               std::to_string(align_a) + " B " + std::to_string(align_b) + " D " +
                               std::to_string(align_c) + " bytes");
  DNNB_CUBLAS_TRY(asked);
  const int32_t one_i = 1, zero_i = 0;
  const float one_f = 1.f, zero_f = 0.f;
  const void* alpha = integer ? static_cast<const void*>(&one_i) : &one_f;
  const void* beta = integer ? static_cast<const void*>(&zero_i) : &zero_f;
  DNNB_CUBLAS_TRY(cublasLtMatmul(*handle, d.op, alpha, p.b, d.a, p.a, d.b, beta, p.y, d.c, p.y, d.c, &heuristic.algo,
                                 workspace, workspace_bytes, device.stream()));
  return Status::ok();
}

bool register_op8(const std::string& op, DType dtype, const std::string& compute_unit,
                  std::function<Status(OpCall&)> run) {
  Implementation impl;
  impl.op = op;
  impl.backend = "cublas";
  impl.dtypes = {dtype};
  impl.compute_unit = compute_unit;
  impl.supports = [dtype](const Problem& problem, const DeviceRuntime& device) {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cublas runs on CUDA devices, not " + device.info().id);
    if (problem.dtype != dtype)
      return Status::unsupported("cublas " + problem.op + " has no " + dtype_name(problem.dtype) + " product");
    return Status::ok();
  };
  impl.run = std::move(run);
  impl.workspace_bytes = [](const Problem&, const DeviceRuntime&) -> Result<size_t> { return kWorkspaceBytes; };
  return Registry::instance().add_implementation(std::move(impl));
}

}  // namespace dnnb::cublas_peer
