// What layernorm_stats and rmsnorm_stats share (docs/blocks.md, "The training step"):
// the signature x [..., N] -> [mean,] rstd, one f32 value per row shaped [..., 1] (as torch's
// native_layer_norm saves them for the backward in every dtype), and the problems.
#pragma once
#include <string>
#include <vector>

#include "reference/norm_stats.h"
#include "suites/ops/op_common.h"

namespace dnnb::ops {

// centered: layernorm_stats (mean and rstd); else rmsnorm_stats (rstd).
inline Result<Signature> norm_stats_signature(const Problem& p, bool centered) {
  DNNB_TRY(check_problem(p, float_dtypes(), {"eps"}));
  auto eps = number_param(p, "eps", centered ? 1e-5 : 1e-6, 0.0);
  if (!eps) return eps.status();
  Shape stats = p.shape;
  stats.back() = 1;
  Signature sig;
  sig.inputs = {tensor_spec("x", p.dtype, p.shape)};
  if (centered) sig.outputs.push_back(tensor_spec("mean", DType::f32, stats));
  sig.outputs.push_back(tensor_spec("rstd", DType::f32, stats));
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

// The forward's row problems, long rows of one value (zero variance: rstd = 1 / sqrt(eps)),
// and the training steps' row counts.
inline std::vector<ProblemText> norm_stats_check_problems() {
  std::vector<ProblemText> problems = row_check_problems();
  for (const char* p : {"4096x1", "64x4096:eps=0.1", "16384x64"}) problems.push_back(p);
  problems.push_back(kManyRowsProblem);
  return problems;
}

}  // namespace dnnb::ops
