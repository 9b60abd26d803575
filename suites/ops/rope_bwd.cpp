// rope_bwd: the gradient of rope with respect to x: dx = dy rotated by the negative angle (the
// transpose of each pair's rotation), pos as in rope; autograd of HF's apply_rotary_pos_emb in
// the fixtures. Same shapes, params, tolerance class and models as rope (rope_desc.h).
#include "reference/register.h"
#include "reference/rope.h"
#include "suites/ops/op_common.h"
#include "suites/ops/rope_desc.h"

namespace dnnb {
namespace {

OpSpec make_rope_bwd_spec() {
  OpSpec spec = ops::op_spec("3", "rope_bwd", "autograd of q * cos + rotate_half(q) * sin with respect to q",
                             ops::float_dtypes(), ToleranceClass::elementwise);
  spec.check_problems = ops::rope_check_problems("dy");
  spec.bench_problems = ops::rope_bench_problems();
  spec.signature = [](const Problem& p) { return ops::rope_signature(p, "dy", "dx"); };
  spec.fill_inputs = ops::fill_rope_inputs;
  spec.flops = ops::rope_flops;
  spec.reference = reference::rope_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_rope_bwd_spec()));

}  // namespace
}  // namespace dnnb
