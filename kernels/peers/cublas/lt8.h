// The 8-bit products of the cuBLAS peer (matmul_i8.cpp, matmul_f8.cpp): one cublasLtMatmul each,
// with cublas_common.h's column-major mapping (y^T = b^T a^T: cuBLAS's A is b, its B is a).
//   s8: CUDA_R_8I operands, CUBLAS_COMPUTE_32I, CUDA_R_32I y (alpha 1, beta 0 as int32).
//   FP8: CUDA_R_8F_E4M3 / CUDA_R_8F_E5M2 operands, CUBLAS_COMPUTE_32F, y bf16, f16 or f32 (C of
//   y's type, beta 0); scales through CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER
//   (cuBLAS's A scale is b's), per tensor (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, the default)
//   or per row of a and column of b (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, cuBLASLt 12.9 and
//   later: cuBLAS's A vector has its m = N elements, B's its n = M), CUBLASLT_MATMUL_DESC_FAST_ACCUM
//   left 0 (torch._scaled_mm's use_fast_accum=False: the tensor cores' FP8 sums are promoted to
//   f32).
// cuBLASLt's 8-bit kernels want "TN": a and b both K-contiguous (b column-major, torch's
// b.layout=transposed). Other layouts go to its heuristic as they are; when it finds no algorithm
// the case is unsupported, with the layouts in the message.
#pragma once
#include "kernels/peers/cublas/cublas_common.h"

namespace dnnb::cublas_peer {

// y = (a b) [x scale_a[m] x scale_b[n]]; strides in elements, pointers with offsets applied.
struct Product8 {
  DType a_dtype = DType::i8, b_dtype = DType::i8, out_dtype = DType::i32;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_m = 0, a_k = 0;
  const void* b = nullptr;
  int64_t b_k = 0, b_n = 0;
  void* y = nullptr;
  int64_t y_m = 0;
  const float* scale_a = nullptr;  // FP8: [1], or [M] with row_scales
  const float* scale_b = nullptr;  // FP8: [1], or [N] with row_scales
  bool row_scales = false;
};

Status run_product8(const CudaDevice& device, OpCall& call, const Product8& p);

// Registers `run` as backend "cublas" of an 8-bit product op whose problems have dtype `dtype`.
bool register_op8(const std::string& op, DType dtype, const std::string& compute_unit,
                  std::function<Status(OpCall&)> run);

}  // namespace dnnb::cublas_peer
