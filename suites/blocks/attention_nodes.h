// The attention nodes transformers' decoder layers share around their sdpa (llama_block,
// gemma2_layer, zamba2_attn_layer; docs/blocks.md): the q, k and v projections split into heads
// (with rope), and the heads merged back into o_proj, by the state_dict names of self_attn.
#pragma once
#include <functional>
#include <string>

#include "core/block.h"

namespace dnnb {

// For each of q (h heads), k and v (kv heads): "self_attn.<n>_proj" (linear of `in` [B*S, width]
// by "self_attn.<n>_proj.weight" into "self_attn.<n>_proj.out"), `adapt(n, rows)` when given
// (nodes adding to the projection; it returns the value to use in its place), then the rows as
// heads [B, nh, S, D] "self_attn.<n>" (a permute), and for q and k with a non-empty `theta`
// (":theta=...") rope at `pos` into "self_attn.<n>.rotated".
void add_qkv_heads(BlockBuilder& g, int64_t b, int64_t s, int64_t width, int64_t h, int64_t kv, int64_t d,
                   const std::string& in, const std::string& pos, const std::string& theta,
                   const std::function<std::string(const std::string& n, const std::string& rows)>& adapt = {});

// sdpa's "self_attn.o" [B, H, S, D] merged into rows [B*S, H*D] and o_proj's "self_attn.out" [B*S, E].
void add_attention_output(BlockBuilder& g, int64_t b, int64_t s, int64_t e, int64_t h, int64_t d);

}  // namespace dnnb
