// The float64 references of family 2's products (docs/ops-family2.md). Each reads its inputs
// in any dtype and layout and writes the contiguous f64 output its signature shapes.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// matmul: a [B?, M, K], b [B?, K, N] -> y [B?, M, N] (torch.matmul).
Status matmul(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// linear: x [M, K], w [N, K][, b [N]] -> y [M, N] (F.linear).
Status linear(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// gemv: w [N, K], x [B, K] -> y [B, N] (torch.mv(w, x[i]) for each row i).
Status gemv(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// dot: a [..., K], b [..., K] -> y [...] (torch.dot / torch.linalg.vecdot).
Status dot(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
