// The float64 reference of embedding_bwd (docs/ops-family2.md): ids, dy -> dW.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// dW[v] = sum of dy[t] over t with ids[t] = v, zero elsewhere; an id outside [0, V) is bad input
// naming its position and value.
Status embedding_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
