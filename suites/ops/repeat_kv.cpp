// repeat_kv: y = x.repeat_interleave(n_rep, dim=1): GQA's key/value heads [B, H, S, D] each
// repeated n_rep times, as HF's repeat_kv (expand + reshape) gives; y [B, H * n_rep, S, D].
// A pure copy: tolerance class selection. FLOP model: none.
#include "reference/layout.h"
#include "reference/register.h"
#include "suites/ops/layout_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> repeat_kv_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"n_rep"}, 4));
  auto d = ops::repeat_kv_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  sig.outputs = {ops::tensor_spec("y", p.dtype, d->y)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_repeat_kv_spec() {
  OpSpec spec = ops::op_spec("2", "repeat_kv", "x.repeat_interleave(n_rep, dim=1)", ops::float_dtypes(),
                             ToleranceClass::selection);
  spec.check_problems = {"1x2x5x8:n_rep=4", "2x4x7x16:n_rep=2", "1x3x4x8:n_rep=1", "2x8x100x128:n_rep=4",
                         "1x1x1x1:n_rep=3", "2x8x33x64:n_rep=4,x.layout=padded", "1x2x9x7:n_rep=5,x.layout=transposed"};
  // Llama-3-8B's 8 KV heads to 32 at 4 x 4096 tokens: 256 MiB of f32 written.
  spec.bench_problems = {"4x8x4096x128:n_rep=4", "1x8x1x128:n_rep=4"};
  spec.signature = repeat_kv_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.reference = reference::repeat_kv;
  return spec;
}

DNNB_REGISTER(register_op(make_repeat_kv_spec()));

}  // namespace
}  // namespace dnnb
