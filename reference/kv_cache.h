// The float64 reference of kv_cache (suites/ops/kv_cache_desc.h): store each sequence's token
// into the caches at pos[b] (in the cache dtype, in place), then decode attention of each query
// head against positions 0..pos[b] of its kv head, read back from the cache exactly.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::reference {

Status kv_cache(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
// The bound of o, as sdpa's (reference/sdpa.h) over the positions each query reads, from the
// inputs of a step before its store (the token's stored value is taken into account).
Result<std::vector<OutputBound>> kv_cache_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

// Stores row x (D values, exact in f32) as cache row `row` of a contiguous host cache tensor of
// D-wide rows in the cache dtype (scale: f8_e4m3fn's; ignored otherwise), as kernels must.
Status store_cache_row(Tensor& cache, int64_t row, const float* x, int64_t d, float scale);

}  // namespace dnnb::reference
