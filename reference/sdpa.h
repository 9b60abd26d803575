// The float64 references of attention (docs/ops-family3.md): F.scaled_dot_product_attention
// forward with the row logsumexp, and its backward as torch autograd computes it, with the
// error bounds of their outputs (OpSpec::output_bounds).
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// q [B,H,Sq,D], k [B,KV,Sk,D], v [B,KV,Sk,Dv][, mask [Sq,Sk]] -> o [B,H,Sq,Dv], lse [B,H,Sq].
// A row with no visible key: o = 0 and lse = -inf (torch's SDPA returns 0 there).
Status sdpa(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// q, k, v[, mask], o, do, lse -> dq, dk, dv (dk and dv summed over the query heads of a group).
// The golden recomputes the probabilities from q and k; o and lse are what kernels read.
Status sdpa_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

// The bound of an attention output o (rounded to `dtype`) whose rows weight up to `keys` values:
// one rounding of o, the f32 sums over the keys, and the scores' error (sums over head_dim,
// the softcap's tanh) through the softmax; score_abs is the largest sum_j p_j |s_j| terms
// (sum_j p_j scale sum_e |q_e k_je|), o_mag the largest sum_j p_j |v_je| (docs/conformance.md).
OutputBound attention_output_bound(DType dtype, int64_t head_dim, int64_t keys, double softcap, double score_abs,
                                   double o_mag);

// Bounds of o and lse, and of dq, dk and dv (docs/conformance.md, "Attention").
Result<std::vector<OutputBound>> sdpa_bounds(const Problem& problem, const std::vector<Tensor>& inputs);
Result<std::vector<OutputBound>> sdpa_bwd_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

}  // namespace dnnb::reference
