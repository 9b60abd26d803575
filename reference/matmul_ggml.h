// The float64 reference of matmul_ggml (docs/ops-family4.md, "matmul_ggml").
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// w [N, K] (q8_0 or q4_0; any other dtype is read as already dequantised values, which is how
// check's magnitude sums |w| |x| reach it), x [M, K] -> y [M, N]: each x row quantised to q8_0
// by core's quantize_row (ggml's quantize_row_q8_0_ref, bit for bit), then per block b the
// exact integer dot sumi_b and y = sum_b (d_w,b x d_x,b) x sumi_b in float64 (ggml's formula
// without its f32 roundings; for finite scales this is the float64 product of the dequantised
// operands).
Status matmul_ggml(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
