// The typed descriptors of the 8-bit products of issue 28 (docs/ops-family4.md, "matmul_i8" and
// "matmul_f8"): shared by the specs, the references, every backend's kernels and the tests, so
// the defaults and the limits live here once. Both are torch's 2-D products y = a @ b with
// a [M, K] and b [K, N] (problem shape "MxNxK"); either operand may be stored transposed or
// padded (`a.layout=`, `b.layout=`; b.layout=transposed is the column-major b that
// torch._scaled_mm and cuBLASLt want).
#pragma once
#include <cstdint>

#include "core/problem.h"
#include "core/status.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::ops {

// matmul_i8 (torch._int_mm): the largest K whose int32 sum cannot overflow. The largest product
// of two int8 values is (-128) x (-128) = 2^14, so K products stay inside int32 while
// K x 2^14 <= 2^31 - 1: K <= 131071. A larger K is bad input naming it.
inline constexpr int64_t kMatmulI8MaxK = 131071;

// matmul_i8: shape "MxNxK", dtype i8, K in 1..kMatmulI8MaxK. y is i32.
Result<GemmDesc> matmul_i8_desc(const Problem& problem);

// matmul_f8 (torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=y.dt)).
//   y[i, j] = scale_a[i or 0] * scale_b[j or 0] * sum_k a[i, k] b[k, j]
// a and b f8_e4m3fn, either of them f8_e5m2 by `a.dt=f8_e5m2` or `b.dt=f8_e5m2` (not both:
// torch on CUDA and cuBLASLt refuse e5m2 x e5m2). Scales are f32 inputs: `scale=tensor` (the
// default) gives scale_a [1] and scale_b [1]; `scale=row` gives scale_a [M, 1] and scale_b
// [1, N]. y is bf16 by default; `y.dt=f16` or `y.dt=f32` with tensor scales (row-wise scaling
// takes bf16 only, as torch on CUDA).
enum class F8Scale { tensor, row };
struct MatmulF8Desc {
  GemmDesc gemm;
  F8Scale scale = F8Scale::tensor;
  DType a = DType::f8_e4m3fn, b = DType::f8_e4m3fn;
  DType y = DType::bf16;
};
Result<MatmulF8Desc> matmul_f8_desc(const Problem& problem);

}  // namespace dnnb::ops
