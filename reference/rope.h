// The references of rope and rope_bwd (docs/ops-family3.md, "Position"): x (or dy) [B, H, S, D]
// of any dtype and layout, pos [B, S] (i64 or i32), rotated pair by pair in float64 by the f32
// angle of ops::rope_angle (HF's), its cos and sin taken in float64.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

// rope: x, pos -> y, each pair rotated by +angle.
Status rope(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// rope_bwd: dy, pos -> dx, each pair rotated by -angle (the rotation's transpose).
Status rope_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

}  // namespace dnnb::reference
