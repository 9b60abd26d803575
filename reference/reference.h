// The scalar references of family 1 (docs/ops-family1.md): the oracle of the whole suite.
// Each reads its inputs in any dtype and layout on the host, computes in float64 written for
// clarity, and writes contiguous f64 outputs shaped as the op's signature says. Inputs and
// outputs come in signature order.
#pragma once
#include <functional>
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

using Inputs = std::vector<Tensor>;
using Outputs = std::vector<Tensor>;

// unary.cpp: x -> y elementwise, y[i] = f(x[i]) (y contiguous with x's logical shape); `op`
// names the op in arity errors. The ops below, and cast (reference/cast.cpp), are calls of it.
Status map_elements(const Inputs& inputs, Outputs& outputs, const std::function<double(double)>& f, const char* op);
Status relu(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status sigmoid(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status tanh(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status exp(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status silu(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status gelu(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status gelu_tanh(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// binary.cpp: a, b -> y = a op b with numpy broadcasting.
Status add(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status sub(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status mul(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status div(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// lerp.cpp: a, b[, w] -> y = a + w (b - a); w is the `weight` param when there is no w input.
Status lerp(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// reductions.cpp: x [..., N] -> y [...] over the last dim.
Status sum(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status mean(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status max(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status norm2(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// softmax.cpp: x[, mask] -> y over the last dim, with scale, softcap and additive mask.
Status softmax(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// layernorm.cpp: x, w, b -> y.
Status layernorm(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// rmsnorm.cpp: x, w -> y, torch or gemma form.
Status rmsnorm(const Problem& problem, const Inputs& inputs, Outputs& outputs);

// cross_entropy.cpp: logits [N, C], target [N] -> loss [] or dlogits [N, C].
Status cross_entropy(const Problem& problem, const Inputs& inputs, Outputs& outputs);
Status cross_entropy_bwd(const Problem& problem, const Inputs& inputs, Outputs& outputs);

}  // namespace dnnb::reference
