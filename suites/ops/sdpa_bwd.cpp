// sdpa_bwd: the gradients dq, dk, dv of sdpa's o for an upstream gradient do, as torch autograd
// gives them; torch: F.scaled_dot_product_attention(...) backward.
// Inputs q, k, v[, mask] as sdpa's, then o [B,H,Sq,Dv] (the forward's output in the problem
// dtype), do [B,H,Sq,Dv] and lse [B,H,Sq] (f32, the forward's): kernels recompute
// p = exp(s - lse) and D = rowsum(do * o) as FlashAttention's backward does. Outputs dq
// [B,H,Sq,D], dk [B,KV,Sk,D], dv [B,KV,Sk,Dv] (dk, dv summed over each group's query heads).
// Tolerance class attention, as sdpa's (reference/sdpa.h).
// FLOP model: 2 (3 D + 2 Dv) per visible pair per head: 2.5x the forward at D = Dv.
#include "reference/register.h"
#include "reference/sdpa.h"
#include "suites/ops/op_common.h"
#include "suites/ops/sdpa_common.h"
#include "suites/ops/sdpa_desc.h"

namespace dnnb {
namespace {

OpSpec make_sdpa_bwd_spec() {
  OpSpec spec = ops::op_spec("3", "sdpa_bwd", "F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale, enable_gqa) backward",
                             ops::float_dtypes(), ToleranceClass::attention);
  spec.check_problems = ops::sdpa_check_problems();
  spec.bench_problems = ops::sdpa_bench_problems();
  spec.signature = [](const Problem& p) { return ops::sdpa_signature(p, true); };
  spec.flops = [](const Problem& p) {
    auto d = ops::sdpa_desc(p);
    return d ? ops::sdpa_backward_flops(*d) : 0.0;
  };
  spec.fill_inputs = ops::fill_sdpa_inputs;
  spec.output_bounds = reference::sdpa_bwd_bounds;
  spec.reference = reference::sdpa_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_sdpa_bwd_spec()));

}  // namespace
}  // namespace dnnb
