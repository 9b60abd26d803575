// softmax over the last dim; torch: torch.softmax(scale*x + mask, -1), with an optional
// softcap first: t = softcap > 0 ? c tanh(x / c) : x; z = scale t + mask;
// y = exp(z - max z) / sum exp(z - max z). Params: scale=F (default 1), softcap=F (default 0,
// off), mask=SHAPE (additive, broadcast to x, may hold -inf; a fully masked row gives 0 as
// SDPA does), masked_rows=1 (random inputs: the mask's first row all -inf; needs mask).
// Tolerance class normalization: a max and a sum over the row, then a divide.
// FLOP model: 5 FLOP per element (max, subtract, exp, sum, divide), +1 per element with a
// scale, +1 with a mask, +3 with a softcap (divide, tanh, multiply).
#include "reference/fill.h"
#include "reference/reference.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> softmax_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {"scale", "softcap", "mask", "masked_rows"}));
  auto scale = ops::number_param(p, "scale", 1.0);
  if (!scale) return scale.status();
  auto softcap = ops::number_param(p, "softcap", 0.0, 0.0);
  if (!softcap) return softcap.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  if (p.has("mask")) {
    auto mask_shape = ops::broadcastable_param(p, "mask", p.shape);
    if (!mask_shape) return mask_shape.status();
    sig.inputs.push_back(ops::tensor_spec("mask", p.dtype, *mask_shape));
  }
  if (p.has("masked_rows")) {
    const std::string v = p.get("masked_rows");
    if (v != "0" && v != "1") return Status::bad_input("softmax: parameter masked_rows='" + v + "' is not 0 or 1");
    if (!p.has("mask")) return Status::bad_input("softmax: parameter masked_rows needs a mask parameter");
  }
  sig.outputs = {ops::tensor_spec("y", p.dtype, p.shape)};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

double softmax_flops(const Problem& p) {
  double per_element = 5;
  if (p.has("scale")) per_element += 1;
  if (p.has("mask")) per_element += 1;
  if (p.has("softcap") && p.get_double("softcap", 0).is_ok() && *p.get_double("softcap", 0) > 0) per_element += 3;
  return per_element * static_cast<double>(shape_numel(p.shape));
}

OpSpec make_softmax_spec() {
  OpSpec spec = ops::family1_spec("softmax", "torch.softmax(scale*x + mask, -1)",
                                   ops::float_dtypes(), ToleranceClass::normalization);
  spec.check_problems = ops::row_check_problems();
  for (const char* p : {"64x4096:mask=64x4096,scale=0.125", "64x4096:softcap=30", "64x4096:scale=0.5,softcap=2",
                        "8x4x128:mask=4x128,masked_rows=1", "64x4096:mask=64x1",
                        "333x1000:layout=transposed,mask=1x1000,scale=0.125",
                        "7x33:mask=7x33,masked_rows=1,scale=0.125,softcap=50"})
    spec.check_problems.push_back(p);
  spec.check_problems.push_back(ops::kManyRowsProblem);
  spec.check_problems.push_back(std::string(ops::kManyRowsProblem) + ":mask=1x2056,scale=0.125");
  spec.bench_problems = ops::row_bench_problems();
  spec.bench_problems.push_back("16384x8192:scale=0.125");
  spec.bench_problems.push_back("64x8192:softcap=30");
  spec.signature = softmax_signature;
  spec.flops = softmax_flops;
  spec.fill_inputs = fill_softmax_inputs;
  spec.reference = reference::softmax;
  return spec;
}

DNNB_REGISTER(register_op(make_softmax_spec()));

}  // namespace
}  // namespace dnnb
