#include "suites/ops/glu_common.h"

#include "suites/ops/op_common.h"

namespace dnnb::ops {

Result<Signature> glu_signature(const Problem& p, bool backward) {
  DNNB_TRY(check_problem(p, float_dtypes(), {}));
  Signature sig;
  sig.inputs = {tensor_spec("a", p.dtype, p.shape), tensor_spec("b", p.dtype, p.shape)};
  if (backward) {
    sig.inputs.push_back(tensor_spec("dy", p.dtype, p.shape));
    sig.outputs = {tensor_spec("da", p.dtype, p.shape), tensor_spec("db", p.dtype, p.shape)};
  } else {
    sig.outputs = {tensor_spec("y", p.dtype, p.shape)};
  }
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec glu_spec(const GluOp& op) {
  OpSpec spec = op_spec(std::string("3"), op.name, op.torch, float_dtypes(), ToleranceClass::elementwise);
  spec.check_problems = row_check_problems();
  // Strided operands other than a (each kernel reads every input through its own strides).
  for (const char* p : {"64x4096:b.layout=transposed", "333x1000:a.layout=padded,b.layout=padded",
                        "2x3x5:b.layout=transposed"})
    spec.check_problems.push_back(p);
  // One element, a masked tail of one lane. Not for the backward: g' crosses 0 (silu' at
  // a = -1.28, gelu_tanh' at a = -0.75), where its f32 value has an absolute error of a few eps
  // that no kernel avoids, and with a single element the elementwise atol (rtol x rms of the
  // output) is the element itself: a purely relative bound that a random a near the crossing
  // fails (geglu_bwd:f32:1x1's a does, by 2x). Seven elements bring back an rms of typical
  // size; the fixtures hold a 1x1 case of every op.
  spec.check_problems.push_back(op.backward ? "1x7" : "1x1");
  if (op.backward)
    for (const char* p :
         {"333x1000:dy.layout=transposed", "64x4096:a.layout=transposed,b.layout=padded,dy.layout=padded"})
      spec.check_problems.push_back(p);
  // Llama-3-8B's FFN activation (intermediate size 14336): 8192 prefill tokens, 16 decode tokens.
  spec.bench_problems = {"8192x14336", "16x14336"};
  spec.signature = [backward = op.backward](const Problem& p) { return glu_signature(p, backward); };
  spec.flops = [per_element = op.flops_per_element](const Problem& p) {
    return per_element * static_cast<double>(shape_numel(p.shape));
  };
  spec.reference = op.reference;
  return spec;
}

}  // namespace dnnb::ops
