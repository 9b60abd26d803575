// What sdpa and sdpa_bwd share: their signatures and random inputs (docs/ops-family3.md).
#pragma once
#include "core/registry.h"
#include "core/rng.h"

namespace dnnb::ops {

// Inputs q, k, v[, mask] (forward), then o, do, lse (backward); outputs o, lse (forward) or
// dq, dk, dv (backward).
Result<Signature> sdpa_signature(const Problem& problem, bool backward);

// q, k, v, do normal(0,1); the mask: normal(0,1) scores offsets with about one key in eleven at
// -inf and query row 1 entirely -inf (the fully masked row: o = 0); the backward's o and lse
// from the float64 forward, rounded to their dtypes as a forward kernel would store them (above
// the reference's FLOP limit, bench sizes only: stand-ins of the same scale, sdpa_common.cpp).
Status fill_sdpa_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// Check and bench problems of both ops.
std::vector<ProblemText> sdpa_check_problems();
std::vector<ProblemText> sdpa_bench_problems();

}  // namespace dnnb::ops
