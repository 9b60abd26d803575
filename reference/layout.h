// The references of family 2's layout ops (docs/ops-family2.md): exact copies, so each output
// element is one input element, read in any dtype and layout through its strides.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// permute: x -> y = x.permute(perm).contiguous().
Status permute(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// concat: a, b -> y = torch.cat([a, b], dim).
Status concat(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// slice: x -> y = x.narrow(dim, start, len).contiguous().
Status slice(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// embedding: ids [T], table [V, D] -> y [T, D] = F.embedding(ids, table).
Status embedding(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// repeat_kv: x [B, H, S, D] -> y [B, H * n_rep, S, D] = x.repeat_interleave(n_rep, dim=1).
Status repeat_kv(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
