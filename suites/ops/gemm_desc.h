// The typed descriptor of the matrix products (matmul, linear, gemv): every kernel of every
// backend and the op specs parse a problem through these functions, so the defaults and the
// checks live here once. In each, y[b] (M x N) = a[b] (M x K) times b[b] (K x N), over a batch.
#pragma once
#include <cstdint>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"

namespace dnnb::ops {

struct GemmDesc {
  int64_t batch = 1;  // matmul's leading dim B; 1 otherwise
  int64_t m = 1, n = 1, k = 1;
  bool tf32 = false;  // matmul at f32 only: the kernel may round a and b to tf32 first
  bool bias = false;  // linear: y += b[n]
};

// matmul: shape "MxNxK" or "BxMxNxK"; param tf32=0|1 (f32 problems only).
Result<GemmDesc> matmul_desc(const Problem& problem);
// linear: shape "MxNxK" (tokens, out features, in features); param bias=0|1 (default 0).
Result<GemmDesc> linear_desc(const Problem& problem);
// gemv: shape "NxK" (the matrix, as torch.mv's); param batch=B vectors (1..16, default 1): m = B.
Result<GemmDesc> gemv_desc(const Problem& problem);
// linear_bwd: shape "MxNxK" (tokens, out features, in features) or "BxMxNxK" (x [B, M, K]);
// param bias=0|1. batch = B (1 for a 2-D x): its products run over batch * m rows.
Result<GemmDesc> linear_bwd_desc(const Problem& problem);

// 2 * B * M * N * K (one multiply and one add per product), plus M * N per batch for a bias.
double gemm_flops(const GemmDesc& desc);

// How each output element of a product is formed, for its tolerance: K products, and tf32's
// input rounding (2^-11) when tf32=1.
DotProductError gemm_error(const GemmDesc& desc);

// The ceiling a product runs against on matrix units (CUDA tensor cores): bf16_tensor,
// f16_tensor; f32 problems run on the FMA units (f32_fma), or tf32_tensor with tf32=1.
std::string tensor_core_unit(const Problem& problem);

// The output y of a product (matmul, linear, gemv, dot): the problem dtype, or f32 for f16 and
// bf16 problems (y.dt=f32: the f32 accumulator stored without rounding).
TensorSpec product_output(const Problem& problem, Shape shape);

}  // namespace dnnb::ops
