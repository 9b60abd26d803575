// sdpa: o = softmax(scale q k^T [softcap] + mask) v with the row logsumexp;
// torch: F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale, enable_gqa).
// Inputs q [B,H,Sq,D], k [B,KV,Sk,D], v [B,KV,Sk,Dv] (GQA: query head h reads kv head
// h / (H/KV)), mask [Sq,Sk] with mask=1; outputs o [B,H,Sq,Dv] (problem dtype) and lse
// [B,H,Sq] (f32, natural log; -inf for a row with no visible key, whose o is 0). Params and the
// causal/window/softcap rules: suites/ops/sdpa_desc.h and docs/ops-family3.md.
// Tolerance class attention: bounds from the problem and inputs (reference/sdpa.h); a fixture
// passes at 2x (3x with softcap) torch's own same-dtype error plus one rounding.
// FLOP model: 2 (D + Dv) per visible (query, key) pair per head (FlashAttention's count).
#include "reference/register.h"
#include "reference/sdpa.h"
#include "suites/ops/op_common.h"
#include "suites/ops/sdpa_common.h"
#include "suites/ops/sdpa_desc.h"

namespace dnnb {
namespace {

OpSpec make_sdpa_spec() {
  OpSpec spec = ops::op_spec("3", "sdpa", "F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale, enable_gqa)",
                             ops::float_dtypes(), ToleranceClass::attention);
  spec.check_problems = ops::sdpa_check_problems();
  spec.bench_problems = ops::sdpa_bench_problems();
  spec.signature = [](const Problem& p) { return ops::sdpa_signature(p, false); };
  spec.flops = [](const Problem& p) {
    auto d = ops::sdpa_desc(p);
    return d ? ops::sdpa_forward_flops(*d) : 0.0;
  };
  spec.fill_inputs = ops::fill_sdpa_inputs;
  spec.output_bounds = reference::sdpa_bounds;
  spec.reference = reference::sdpa;
  return spec;
}

DNNB_REGISTER(register_op(make_sdpa_spec()));

}  // namespace
}  // namespace dnnb
