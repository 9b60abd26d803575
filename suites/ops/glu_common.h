// What the gating ops of family 3 share (docs/ops-family3.md, "Gating"): swiglu and geglu
// take a (the gate) and b (the up projection) of one shape and give y; their backward ops
// take a, b and dy and give da and db. Every operand has the problem's dtype and shape; the
// common params apply (`layout=` to a, `<operand>.layout=` to any input).
#pragma once
#include <string>

#include "core/registry.h"

namespace dnnb::ops {

struct GluOp {
  std::string name;
  std::string torch;
  bool backward = false;     // inputs a, b, dy -> da, db; else a, b -> y
  double flops_per_element;  // documented in the op's file
  Status (*reference)(const Problem&, const std::vector<Tensor>&, std::vector<Tensor>&);
};

Result<Signature> glu_signature(const Problem& problem, bool backward);
// A family-3 spec: the row problems of family 1 with layouts on every input, and the FFN
// activations of Llama-3-8B (8192 prefill tokens and 16 decode tokens of 14336) as benches.
OpSpec glu_spec(const GluOp& op);

}  // namespace dnnb::ops
