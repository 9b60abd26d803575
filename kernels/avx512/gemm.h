// The AVX-512 GEMM engine behind matmul, linear and gemv (when its matrix is not
// row-contiguous): y[b] (M x N) = a[b] (M x K) times b[b] (K x N) (+ bias[n]), every
// operand a strided view of f32, f16 or bf16 storage, accumulated in f32, the output
// rounded once to its dtype (f32, f16 or bf16, round to nearest even). Design: docs/avx512.md.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

// Element (r, c) of batch item i is at data + i * batch_stride + r * row_stride + c * col_stride
// (in elements of dtype). Any strides: a transposed operand is the same view with the two
// strides swapped.
struct MatrixView {
  const void* data = nullptr;
  DType dtype = DType::f32;
  int64_t row_stride = 0, col_stride = 1, batch_stride = 0;
};

struct GemmCall {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  MatrixView a;  // M x K
  MatrixView b;  // K x N
  // y: M x N, unit column stride.
  void* y = nullptr;
  DType y_dtype = DType::f32;
  int64_t y_row_stride = 0, y_batch_stride = 0;
  // Optional bias, added to every row: bias[n] at bias + n * bias_stride.
  const void* bias = nullptr;
  DType bias_dtype = DType::f32;
  int64_t bias_stride = 1;
  // bf16 a and b on a CPU with AVX512_BF16: multiply pairs with VDPBF16PS (gemm_bf16.cpp),
  // which treats subnormal inputs and products as zero; false converts them to f32 while
  // packing and multiplies with FMA, as f16 and f32 are.
  bool bf16_pairs = true;
  // With bf16_pairs, on a CPU (and OS) that runs AMX_BF16 (has_amx_bf16): TDPBF16PS tiles
  // (gemm_amx.cpp), which treat subnormals as VDPBF16PS does. matmul and linear set it; gemv,
  // whose few rows would fill a fraction of each tile, keeps VDPBF16PS.
  bool amx = false;
};

// True when this CPU and OS run AMX_BF16 tiles (cpu_features().amx_bf16_usable(), read once)
// and DNNB_AVX512_AMX is not 0; that variable lets one host time VDPBF16PS against AMX.
extern const bool has_amx_bf16;

// The view of the last two dims of t (and its leading batch dim, if any); transposed swaps
// rows and columns (linear's w [N, K] read as K x N).
MatrixView matrix_view(const Tensor& t, bool transposed = false);

// Writes v to element `index` of a f32, f16 or bf16 array, rounded to nearest even (the
// scalar outputs of gemv and dot).
inline void store_rounded(void* base, DType dtype, int64_t index, float v) {
  switch (dtype) {
    case DType::f16: static_cast<uint16_t*>(base)[index] = f32_to_f16(v); break;
    case DType::bf16: static_cast<uint16_t*>(base)[index] = f32_to_bf16(v); break;
    default: static_cast<float*>(base)[index] = v;
  }
}

// The ceiling of the default matmul and linear (GemmCall::amx set), as gemm() picks the path:
// bf16 problems run AMX tiles (bf16_amx) where has_amx_bf16, else VDPBF16PS (bf16_dot) where
// the CPU has AVX512_BF16; everything else runs the f32 FMA units.
inline std::string bf16_pairs_unit(const Problem& problem, const DeviceRuntime&) {
  if (problem.dtype != DType::bf16 || !has_native_bf16) return "f32_fma";
  return has_amx_bf16 ? "bf16_amx" : "bf16_dot";
}

// Implementation::when of the matmul and linear variant "fma" (bf16_pairs = false).
inline constexpr const char* kBf16FmaWhen =
    "bf16 operands or products below 2^-126 (subnormal), which VDPBF16PS and AMX treat as zero: converts bf16 to f32 "
    "and multiplies with FMA, one product per lane and instruction instead of two";

// Runs the product over OpenMP threads. unsupported for a dtype other than f32/f16/bf16 or
// an output whose columns are not unit-stride; bad_input when a tensor is not host memory.
Status gemm(const GemmCall& call);

}  // namespace dnnb::avx512
