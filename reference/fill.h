// Random inputs for checks beyond the fixtures (docs/ops-family1.md, "Random inputs"). The
// harness hands contiguous host tensors with the signature's dtypes, in signature order, and
// an Rng seeded from the problem, so every backend and every rerun sees the same values.
// Every value is rounded through the tensor's dtype (store_element), so what the reference
// reads is exactly what the kernels read.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb {

// normal(0, 1) into every input, in order. Integer inputs are refused (bad_input): an op
// with integer inputs needs its own rule.
Status fill_normal_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// div: a as normal(0, 1); b = sign(v) (0.5 + |v|) with v normal, so |b| >= 0.5 and the
// quotient stays well conditioned.
Status fill_div_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// softmax: x normal; the mask (if any) holds 0, or -inf with probability 1/4; with
// masked_rows=1 the mask's first row is all -inf (a fully masked row, which gives y = 0).
Status fill_softmax_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// cross_entropy(_bwd): logits normal; targets uniform in [0, C), and when the problem has
// `ignore_index` about one row in eight is set to it instead.
Status fill_cross_entropy_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

}  // namespace dnnb
