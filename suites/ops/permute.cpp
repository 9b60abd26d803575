// permute: y = x.permute(perm).contiguous(), any permutation of up to 4 dims (perm=0213).
// A pure copy: tolerance class selection (every element bit-equal to its source).
// FLOP model: none; bytes: x read once, y written once.
#include "reference/layout.h"
#include "reference/register.h"
#include "suites/ops/layout_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> permute_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"perm"}));
  auto order = ops::permute_order(p);
  if (!order) return order.status();
  Shape y(p.shape.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = p.shape[(*order)[i]];
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  sig.outputs = {ops::tensor_spec("y", p.dtype, y)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_permute_spec() {
  OpSpec spec = ops::op_spec("2", "permute", "x.permute(perm).contiguous()", ops::float_dtypes(),
                             ToleranceClass::selection);
  spec.check_problems = {"2x3x5x7:perm=0213", "4x5x6:perm=120", "33x65:perm=10", "2x3x4x5:perm=3120",
                         "2x2x3x3:perm=0123", "17:perm=0", "1000x1000:perm=10", "64x128x96:perm=021",
                         "8x16x32x64:perm=0213", "4x6x40x72:perm=2301", "33x65:perm=10,x.layout=padded"};
  // 256 MiB of f32 each: attention's head split (B, S, H, D) -> (B, H, S, D), and a 2-D transpose.
  spec.bench_problems = {"8x4096x32x64:perm=0213", "8192x8192:perm=10"};
  spec.signature = permute_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.reference = reference::permute;
  return spec;
}

DNNB_REGISTER(register_op(make_permute_spec()));

}  // namespace
}  // namespace dnnb
