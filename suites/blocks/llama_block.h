// What llama_block (the forward) and llama_block_bwd (the training step) share: the problem's
// dimensions and the forward graph up to the MLP's activation (docs/blocks.md).
#pragma once
#include <string>

#include "core/block.h"
#include "suites/blocks/graph_text.h"

namespace dnnb::llama {

struct Dims {
  int64_t b = 0, s = 0, e = 0, h = 0, kv = 0, f = 0, d = 0, m = 0;  // batch, sequence, hidden, heads, kv heads, ffn, head dim, tokens
  std::string eps, theta;                                            // ":eps=...", ":theta=..."
};
Result<Dims> dims_of(const Problem& p);

// Declares the layer's 9 weights by their state_dict names (in the order of the block's inputs).
void declare_weights(BlockBuilder& g, const Dims& d);

// Declares x, pos, the 9 weights by their state_dict names, and the nodes from input_layernorm
// to mlp.act (values "n1", "self_attn.q.rotated", "self_attn.k.rotated", "self_attn.v",
// "self_attn.o", "self_attn.o.rows", "h.bse", "h", "n2", "mlp.gate", "mlp.up", "mlp.act.out").
// With `saved`, also what the backward reads that the forward does not keep: each rmsnorm's
// rstd ("input_layernorm.rstd" over rows of x, "post_attention_layernorm.rstd" over rows of h)
// and sdpa's lse ("self_attn.lse").
void declare_forward(BlockBuilder& g, const Dims& d, bool saved);

}  // namespace dnnb::llama
