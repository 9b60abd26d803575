// The float64 references of layernorm_bwd and rmsnorm_bwd (docs/ops-family1.md, "Backward of
// the norms"), their random inputs and their error bounds. Both take
// the statistics the forward saved, as torch's native_layer_norm_backward and
// _fused_rms_norm_backward do: mean and rstd (f32, one per row, shaped [..., 1]).
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// x, w, dy, mean, rstd -> dx, dw, db: with xhat = (x - mean) rstd and g = dy w,
//   dx = rstd (g - mean_j(g) - xhat mean_j(g xhat)),  dw = sum_rows dy xhat,  db = sum_rows dy.
Status layernorm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// x, w, dy, rstd -> dx, dw: with xhat = x rstd and g = dy w (dy (1 + w) for form=gemma),
//   dx = rstd (g - xhat mean_j(g xhat)),  dw = sum_rows dy xhat.
Status rmsnorm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

// Random inputs of either op: x, w, dy normal(0, 1), and the statistics a forward computing
// exactly would save: each row's mean (layernorm) and rstd = 1 / sqrt(var + eps) (layernorm,
// biased variance) or 1 / sqrt(mean(x^2) + eps) (rmsnorm), in float64 rounded once to f32.
Status fill_norm_bwd_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// The error bounds of dx, dw (and db) for one case (OpSpec::output_bounds; reasons in
// docs/ops-family1.md): dx the normalization class against the rms of the reference's dx; dw
// and db one rounding of the output dtype plus 8 (sqrt(rows) + 4) u_f32 x the rms over columns
// of sum_rows |dy xhat| (|dy| for db): a sum of `rows` f32 terms, each with a few roundings.
Result<std::vector<OutputBound>> norm_bwd_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

}  // namespace dnnb::reference
