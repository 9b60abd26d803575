// The float64 reference of linear_bwd (docs/ops-family2.md): the gradients of F.linear.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// linear_bwd: x [B?, M, K], w [N, K], dy [B?, M, N] -> dx = dy w [B?, M, K], dw = dy^T x [N, K],
// and db [N] (the column sums of dy) when bias=1.
Status linear_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
