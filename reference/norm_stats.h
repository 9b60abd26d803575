// The float64 references of layernorm_stats and rmsnorm_stats (docs/blocks.md, "The training
// step"): what the forward of a norm saves for its backward, one value per row in f32,
// shaped [..., 1] as torch's native_layer_norm returns them; and their error bounds.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// x [..., N] -> mean [..., 1], rstd [..., 1]: rstd = 1 / sqrt(var + eps), biased variance.
Status layernorm_stats(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// x [..., N] -> rstd [..., 1] = 1 / sqrt(mean(x^2) + eps).
Status rmsnorm_stats(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

// Bounds (OpSpec::output_bounds): each statistic is an f32 sum over the N columns of a row,
// whose rounding error in any order is within lambda sqrt(N) u of the sum of |terms| with high
// probability (the dot_product class's rule, lambda = 8), plus a few roundings per term and
// the square root and division: mean atol = 8 (sqrt(N) + 4) u x the rms over rows of
// mean_c |x|; rstd rtol = 8 (sqrt(N) + 4) u (its terms, squares, are all positive).
Result<std::vector<OutputBound>> norm_stats_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

}  // namespace dnnb::reference
