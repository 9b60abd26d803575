// concat: y = torch.cat([a, b], dim); a has the problem's shape, b=<shape> may differ from it
// in `dim` only (Zamba2 joins the hidden state and the original embeddings on the last dim).
// A pure copy: tolerance class selection. FLOP model: none.
#include "reference/layout.h"
#include "reference/register.h"
#include "suites/ops/layout_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> concat_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"dim", "b"}));
  auto d = ops::concat_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("a", p.dtype, d->a), ops::tensor_spec("b", p.dtype, d->b)};
  sig.outputs = {ops::tensor_spec("y", p.dtype, d->y)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_concat_spec() {
  OpSpec spec = ops::op_spec("2", "concat", "torch.cat([a, b], dim)", ops::float_dtypes(), ToleranceClass::selection);
  spec.check_problems = {"4x8:b=4x5,dim=1", "3x16:b=5x16,dim=0", "2x3x4:b=2x6x4,dim=1", "2x4x64:dim=2",
                         "1:dim=0",         "333x1000:b=333x24,dim=1", "64x4096:a.layout=padded,dim=1",
                         "7x33:b=7x65,b.layout=transposed,dim=1", "2x3x5x7:b=2x3x5x9,dim=3"};
  // 256 MiB of f32 read and written: joining two halves on the last dim and on the first.
  spec.bench_problems = {"8192x4096:dim=1", "4096x8192:dim=0"};
  spec.signature = concat_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.reference = reference::concat;
  return spec;
}

DNNB_REGISTER(register_op(make_concat_spec()));

}  // namespace
}  // namespace dnnb
