// What the decode-step blocks (llama_decode, gemma2_decode; docs/blocks.md "The decode step")
// share: the inputs of each step, the bytes a step moves, and the caches' unwritten positions.
#pragma once
#include <functional>

#include "core/block.h"
#include "suites/blocks/block_spec.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb {

// NaN in every cache position outside first(pos0(b)) .. pos0(b) - 1 (the positions held before
// step 0, within the window if there is one): a read past a sequence's length or before its
// window shows.
Status nan_outside_held(const ops::KvCacheDesc& desc, Tensor& cache);

// A decode block of inputs x [B, 1, E], pos [B] i32, k_cache and v_cache (state), then its
// weights, whose kv_cache node is `cache_desc(p)` and whose graph is `build(p)`: sets def.steps
// (the cache's steps), def.step_inputs (step 0, after the BlockInit draws: pos[b] = pos0(b),
// the caches NaN outside the held positions; later steps: a new token x and pos[b] = pos0(b) +
// step, the caches and weights kept) and def.bytes (the weights once, the cache positions each
// sequence reads and the token's rows written, ops::kv_cache_bytes, and x and y; intermediates,
// a few vectors, left out).
void set_decode_steps(BlockDef& def, std::function<Result<ops::KvCacheDesc>(const Problem&)> cache_desc,
                      std::function<Result<BlockGraph>(const Problem&)> build);

}  // namespace dnnb
