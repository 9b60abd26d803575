// rope: rotary position embedding of x [B, H, S, D] at positions pos [B, S] (docs/ops-family3.md,
// "Position"): HF's apply_rotary_pos_emb with LlamaRotaryEmbedding's f32 angle (form=half) or
// Meta's llama apply_rotary_emb (form=interleaved); rot < D rotates the first rot dims only.
// Tolerance class elementwise: cos and sin are the transcendental steps, each output one
// 2-term sum. FLOP and byte model: rope_desc.h (x, pos read once, y written once).
#include "reference/register.h"
#include "reference/rope.h"
#include "suites/ops/op_common.h"
#include "suites/ops/rope_desc.h"

namespace dnnb {
namespace {

OpSpec make_rope_spec() {
  OpSpec spec = ops::op_spec("3", "rope", "q * cos + rotate_half(q) * sin (HF apply_rotary_pos_emb)",
                             ops::float_dtypes(), ToleranceClass::elementwise);
  spec.check_problems = ops::rope_check_problems("x");
  spec.bench_problems = ops::rope_bench_problems();
  spec.signature = [](const Problem& p) { return ops::rope_signature(p, "x", "y"); };
  spec.fill_inputs = ops::fill_rope_inputs;
  spec.flops = ops::rope_flops;
  spec.reference = reference::rope;
  return spec;
}

DNNB_REGISTER(register_op(make_rope_spec()));

}  // namespace
}  // namespace dnnb
