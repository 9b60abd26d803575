// lerp: y = a + w (b - a); torch: torch.lerp(a, b, w). w is the scalar `weight=F` (default
// 0.5) or, with `w=SHAPE`, a third input broadcast to a's shape; not both.
// Tolerance class elementwise: three roundings per element in a kernel (torch also switches
// to b - (b - a)(1 - w) for |w| >= 0.5), more than one correctly rounded operation.
// FLOP model: 3 FLOP per element (subtract, multiply, add).
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> lerp_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"weight", "w"}));
  if (p.has("weight") && p.has("w"))
    return Status::bad_input("lerp: parameters weight and w are exclusive (scalar or tensor weight)");
  auto weight = ops::number_param(p, "weight", 0.5);
  if (!weight) return weight.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("a", p.dtype, p.shape), ops::tensor_spec("b", p.dtype, p.shape)};
  if (p.has("w")) {
    auto w_shape = ops::broadcastable_param(p, "w", p.shape);
    if (!w_shape) return w_shape.status();
    sig.inputs.push_back(ops::tensor_spec("w", p.dtype, *w_shape));
  }
  sig.outputs = {ops::tensor_spec("y", p.dtype, p.shape)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec make_lerp_spec() {
  OpSpec spec = ops::family1_spec("lerp", "torch.lerp(a, b, w)",
                                   ops::float_dtypes(), ToleranceClass::elementwise);
  spec.check_problems = ops::row_check_problems();
  for (const char* p : {"333x1000:weight=0.25", "4097:weight=-1.5", "64x4096:w=64x4096", "64x4096:w=1x4096",
                        "64x4096:w=64x1", "2x7x33:layout=transposed,w=7x1"})
    spec.check_problems.push_back(p);
  spec.bench_problems = {"16384x8192", "16384x8192:w=16384x8192", "1x8192", "64x8192"};
  spec.signature = lerp_signature;
  spec.flops = [](const Problem& p) { return 3.0 * static_cast<double>(shape_numel(p.shape)); };
  spec.reference = reference::lerp;
  return spec;
}

DNNB_REGISTER(register_op(make_lerp_spec()));

}  // namespace
}  // namespace dnnb
