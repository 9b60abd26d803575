// The float64 references of the activations' backward (docs/ops-family1.md, "Backward of the
// activations"): x, dy -> dx = dy f'(x), reading x and dy in any dtype and layout and writing a
// contiguous f64 dx of x's shape.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// f = gelu, approximate=none (Phi(x) + x phi(x)) or tanh (torch's GeluBackward tanh form).
Status gelu_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// f = silu: s (1 + x (1 - s)), s = sigmoid(x).
Status silu_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
