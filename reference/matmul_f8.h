// The float64 reference of matmul_f8 (docs/ops-family4.md, "matmul_f8"): torch._scaled_mm.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// matmul_f8: a [M, K], b [K, N] (f8_e4m3fn or f8_e5m2, any layout), scale_a [1] or [M, 1],
// scale_b [1] or [1, N] -> y [M, N] = scale_a * scale_b * (a @ b), in float64 (the products of
// 8-bit floats are exact there; the output dtype's rounding is the checker's).
Status matmul_f8(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
