// What gelu_bwd and silu_bwd share (docs/ops-family1.md, "Backward of the activations"):
// inputs x and dy of the problem's shape and dtype, output dx = dy f'(x) of that shape. The
// common params apply (`layout=` to x, `<operand>.layout=` to x or dy).
#pragma once
#include <string>
#include <vector>

#include "core/registry.h"

namespace dnnb::ops {

struct ActBwdOp {
  std::string name;
  std::string torch;
  std::vector<std::string> param_keys;  // op parameters besides the common ones
  double flops_per_element;             // documented in the op's file
  Status (*reference)(const Problem&, const std::vector<Tensor>&, std::vector<Tensor>&);
  Status (*check_params)(const Problem&) = nullptr;  // the op's own parameters; bad_input naming the key
};

// gelu_bwd's `approximate=none|tanh` (default none, as F.gelu): true for tanh; bad_input naming
// the key for any other value. The spec, the reference and every kernel read it here.
Result<bool> gelu_bwd_tanh(const Problem& problem);

Result<Signature> act_bwd_signature(const Problem& problem, const std::vector<std::string>& param_keys);
// A family-1 spec: the row problems of family 1 with layouts on either input, and 256 MiB of
// f32 x (the size) as the bench.
OpSpec act_bwd_spec(const ActBwdOp& op);

}  // namespace dnnb::ops
