// The float64 references of family 3's gating ops (docs/ops-family3.md, "Gating"). Each reads
// its inputs in any dtype and layout and writes contiguous f64 outputs of the inputs' shape.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// a, b -> y = silu(a) b (F.silu(a) * b).
Status swiglu(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// a, b -> y = gelu_tanh(a) b (F.gelu(a, approximate='tanh') * b).
Status geglu(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// a, b, dy -> da = dy b silu'(a), db = dy silu(a).
Status swiglu_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// a, b, dy -> da = dy b gelu_tanh'(a), db = dy gelu_tanh(a).
Status geglu_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
