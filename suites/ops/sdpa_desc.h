// The typed descriptor of attention (sdpa, sdpa_bwd; docs/ops-family3.md): every kernel, the
// specs and the reference parse a problem through sdpa_desc, so defaults and checks live here.
// Shape "BxHxSxD": batch, query heads, query length, head dim of q and k.
#pragma once
#include <cstdint>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"

namespace dnnb::ops {

struct SdpaDesc {
  int64_t batch = 1, heads = 1, kv_heads = 1;  // kv_heads divides heads (GQA, enable_gqa=True)
  int64_t sq = 1, sk = 1;                      // query and key lengths
  int64_t d = 1, dv = 1;                       // head dims of q/k and of v
  bool causal = false;   // is_causal: query i sees keys j <= i (torch's top-left alignment)
  int64_t window = 0;    // > 0: also only keys j > i - window (Gemma 2's sliding window)
  double softcap = 0;    // > 0: scores s -> softcap * tanh(s / softcap) before the mask
  bool mask = false;     // an additive mask input [sq, sk] in the problem dtype (-inf allowed)
  double scale = 1;      // default 1 / sqrt(d)

  int64_t group() const { return heads / kv_heads; }
  // Whether key j is visible to query i by causality and window (the mask input aside).
  bool visible(int64_t i, int64_t j) const {
    if (causal && j > i) return false;
    if (window > 0 && j <= i - window) return false;
    return true;
  }
  // The number of visible (i, j) pairs of one head.
  double visible_pairs() const;
};

// Params: kv=<kv heads> (default H), sk=<key length> (default S), dv=<v head dim> (default D),
// causal=0|1, window=<W> (needs causal=1), softcap=<c>, mask=0|1 (not with causal=1: torch
// raises on CUDA; put the causal part into the mask), scale=<s>.
Result<SdpaDesc> sdpa_desc(const Problem& problem);

// The parameter keys sdpa and sdpa_bwd take (for ops::check_problem).
const std::vector<std::string>& sdpa_param_keys();

// FLOP counts as FlashAttention's benchmarks count them, over visible pairs only (a causal
// problem is about half): forward 2 pairs (D + Dv) per head; backward 2 pairs (3 D + 2 Dv)
// (S = QK^T again, dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q): 2.5x the forward at D = Dv.
double sdpa_forward_flops(const SdpaDesc& d);
double sdpa_backward_flops(const SdpaDesc& d);

// The shapes of the operands.
Shape sdpa_q_shape(const SdpaDesc& d);     // [B, H, Sq, D]
Shape sdpa_k_shape(const SdpaDesc& d);     // [B, KV, Sk, D]
Shape sdpa_v_shape(const SdpaDesc& d);     // [B, KV, Sk, Dv]
Shape sdpa_o_shape(const SdpaDesc& d);     // [B, H, Sq, Dv]
Shape sdpa_lse_shape(const SdpaDesc& d);   // [B, H, Sq]
Shape sdpa_mask_shape(const SdpaDesc& d);  // [Sq, Sk]

}  // namespace dnnb::ops
