// matmul_ggml (docs/ops-family4.md, "matmul_ggml"): y[M, N] f32 = x[M, K] times w[N, K]^T as
// ggml's mul_mat computes it for a q8_0 or q4_0 weight (the problem's dtype): each row of x is
// quantised to q8_0 (quantize_row_q8_0_ref), then per 32-value block an exact integer dot of
// the quants, scaled by d_w x d_x, summed over the blocks. Shared by the spec, the reference,
// every backend's kernel and tests/test_matmul_ggml.cpp.
#pragma once
#include <cstdint>
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::ops {

struct GgmlDesc {
  int64_t m = 1, n = 1, k = 32;  // x rows (tokens), w rows (output features), inner length
  DType w = DType::q8_0;         // q8_0 or q4_0
  // Random inputs only (fill_matmul_ggml_inputs): every 3rd block of x and every 5th of w all
  // zero (d = 0), and the scales of x's and w's normal(0, 1) values.
  bool zeros = false;
  double x_scale = 1, w_scale = 1;
  int64_t blocks() const { return k / 32; }
};

// The weight dtypes: q8_0, q4_0.
const std::vector<DType>& matmul_ggml_dtypes();
// x's dtypes (`x.dt=`, default f32): f32, f16, bf16; each row is widened to f32 (exactly)
// before it is quantised.
const std::vector<DType>& matmul_ggml_x_dtypes();

// Shape "MxNxK" (K a multiple of 32); params zeros=0|1, xscale=S, wscale=S (S > 0, finite).
// bad_input naming the shape or the key otherwise.
Result<GgmlDesc> matmul_ggml_desc(const Problem& problem);

// The random case's inputs (w [N, K] in the block format, x [M, K] in its dtype):
// normal(0, 1) x scale, w quantised by core's quantize_row (ggml's reference quantiser), with
// the zero blocks of `zeros`.
Status fill_matmul_ggml_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

}  // namespace dnnb::ops
