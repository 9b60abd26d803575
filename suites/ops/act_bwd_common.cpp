#include "suites/ops/act_bwd_common.h"

#include "suites/ops/op_common.h"

namespace dnnb::ops {

Result<bool> gelu_bwd_tanh(const Problem& p) {
  const std::string value = p.get("approximate", "none");
  if (value == "none") return false;
  if (value == "tanh") return true;
  return Status::bad_input(p.op + ": parameter approximate='" + value + "' is not none or tanh");
}

Result<Signature> act_bwd_signature(const Problem& p, const std::vector<std::string>& param_keys) {
  DNNB_TRY(check_problem(p, float_dtypes(), param_keys));
  Signature sig;
  sig.inputs = {tensor_spec("x", p.dtype, p.shape), tensor_spec("dy", p.dtype, p.shape)};
  sig.outputs = {tensor_spec("dx", p.dtype, p.shape)};
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec act_bwd_spec(const ActBwdOp& op) {
  OpSpec spec = family1_spec(op.name, op.torch, float_dtypes(), ToleranceClass::elementwise);
  spec.check_problems = row_check_problems();
  // dy strided, and both strided at once (each kernel reads every input through its own strides).
  for (const char* p : {"333x1000:dy.layout=transposed", "64x4096:dy.layout=padded,x.layout=padded",
                        "2x3x5:dy.layout=transposed", kManyRowsProblem})
    spec.check_problems.push_back(p);
  // Seven elements, not one: f'(x) crosses 0 (silu' at x = -1.28, gelu' at -0.75, gelu_tanh' at
  // -0.75), where its f32 value has an absolute error of a few eps that no kernel avoids; with
  // a single element the elementwise atol (rtol x rms of the output) is the element itself, a
  // purely relative bound that a random x near the crossing fails (as for swiglu_bwd). The
  // fixtures hold a 1x1 case of every op.
  spec.check_problems.push_back("1x7");
  // 256 MiB of f32 x (and of dy and dx): 8192 x 8192; 16384 x 8192 (256 MiB of f16/bf16 x) is
  // family 1's row bench.
  spec.bench_problems = {"8192x8192", "16384x8192"};
  const auto keys = op.param_keys;
  const auto check_params = op.check_params;
  spec.signature = [keys, check_params](const Problem& p) -> Result<Signature> {
    auto sig = act_bwd_signature(p, keys);
    if (!sig) return sig;
    if (check_params) DNNB_TRY(check_params(p));
    return sig;
  };
  spec.flops = [per_element = op.flops_per_element](const Problem& p) {
    return per_element * static_cast<double>(shape_numel(p.shape));
  };
  spec.reference = op.reference;
  return spec;
}

}  // namespace dnnb::ops
