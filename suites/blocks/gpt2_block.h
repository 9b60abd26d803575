// What gpt2_block (the forward) and gpt2_block_bwd (the training step) share: the problem's
// dimensions and the forward graph up to the MLP's activation (docs/blocks.md).
#pragma once
#include <string>

#include "core/block.h"
#include "suites/blocks/graph_text.h"

namespace dnnb::gpt2 {

struct Dims {
  int64_t b = 0, s = 0, e = 0, h = 0, d = 0, m = 0;  // batch, sequence, hidden, heads, head dim, tokens
  std::string eps;                                   // "eps=..." of both layernorms
};
Result<Dims> dims_of(const Problem& p);

// Declares x, the 12 weights by their state_dict names, and the nodes from ln_1 to mlp.act
// (values "ln_1.rows", "attn.q.out", "attn.k.out", "attn.v.out", "attn.o", "attn.o.rows",
// "h.bse", "h", "ln_2.out", "mlp.fc", "mlp.act.out", the weights' transposed views
// "<layer>.w"). With `saved`, also what the backward reads that the forward does not keep:
// each layernorm's statistics ("ln_1.mean", "ln_1.rstd", "ln_2.mean", "ln_2.rstd", over rows of
// x and h) and sdpa's lse ("attn.lse").
void declare_forward(BlockBuilder& g, const Dims& d, bool saved);

}  // namespace dnnb::gpt2
