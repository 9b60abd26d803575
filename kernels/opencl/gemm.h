// The tiled GEMM (gemm.cl) that matmul and linear share: each passes its operands as strided
// matrix views, so transposed, padded and batched operands need no copy. Also the products'
// program: gemm.cl, gemv.cl and dot.cl built together, one program per dtype for all four ops
// (each PoCL build costs seconds, most of it fixed per program).
#pragma once
#include <cstdint>
#include <string>

#include "kernels/opencl/opencl_launch.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::opencl {

// The products' program (product_body.cl, gemm.cl, gemv.cl, dot.cl), named kProductProgram and
// built with build_options(device, problem dtype).
inline constexpr const char* kProductProgram = "products";
const std::string& product_source();

// A batch of matrices inside a tensor: element (b, i, j) at offset + b batch + i row + j col
// (in elements; batch 0 for an operand shared by every batch).
struct MatrixView {
  const Tensor* tensor = nullptr;
  int64_t batch = 0, row = 0, col = 0;
};
// The view of a [rows, cols] or [batch, rows, cols] tensor as it is stored.
MatrixView matrix_view(const Tensor& t);
// The same matrices read transposed (rows and columns swapped): linear's w [N, K] as B (K x N).
MatrixView transposed(MatrixView v);

// y[b] (M x N) = a[b] (M x K) b[b] (K x N) (+ bias[n], a [N] view of the storage dtype), over
// desc.batch; a, b and bias of the problem dtype, y of it or f32. f32 accumulation.
// `what` names the op in errors.
Status run_gemm(OpCall& call, const ops::GemmDesc& desc, const MatrixView& a, const MatrixView& b, const Tensor* bias,
                const MatrixView& y, const std::string& what);

}  // namespace dnnb::opencl
