// The float64 reference of matmul_i8 (docs/ops-family4.md, "matmul_i8"): torch._int_mm.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// matmul_i8: a i8 [M, K], b i8 [K, N] (any layout) -> y [M, N], the exact integer sums (every
// sum of K <= 131071 products of int8 values is an integer below 2^31, exact in float64).
Status matmul_i8(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
