// Registration of a block (docs/blocks.md): its OpSpec (signature, FLOPs, tokens, random
// inputs, the float64 graph as its reference, its tolerance and the divergence report) and,
// once every op has registered, one implementation per backend that has all of its nodes' ops,
// running the graph with that backend's defaults. A backend lacking one is recorded as an
// absence with the node and op (`dnnblocks list`). A fused implementation of a block or of a
// sub-graph is registered as any other implementation of the block's op (a variant, or the
// default of its backend): the block spec, its check and its bench take it as they are.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/block.h"

namespace dnnb {

struct BlockDef {
  std::string name;
  std::string torch;  // the transformers module it computes
  std::vector<DType> dtypes;
  std::vector<std::string> param_keys;  // besides the common ones
  std::vector<ProblemText> check_problems, bench_problems;
  // The graph of a problem "BxSxE[:params]" (batch, sequence, hidden).
  std::function<Result<BlockGraph>(const Problem&)> build;
  // Blocks with state (a decode step through KV caches, BlockBuilder::state): the steps a
  // check runs per case (unset: 1) and the inputs of each step: at step 0 called after the
  // BlockInit draws (positions, the caches' unwritten positions), at later steps rewriting the
  // inputs that are not state (a new token and its positions).
  std::function<int(const Problem&)> steps;
  std::function<Status(const Problem&, int step, std::vector<Tensor>& inputs, Rng& rng)> step_inputs;
  // The bytes a problem must move, when not every input is read whole (a cache filled only up to
  // each sequence's position); unset: every input read once and every output written once.
  std::function<double(const Problem&)> bytes;
};

bool register_block(BlockDef def);

// The attention and MLP widths of a block problem: heads=H, kv=KV (default H), ffn=F.
struct HeadsKvFfn {
  int64_t h = 0, kv = 0, f = 0;
};
// Parses them (a value that is no integer is an error naming its param); checked apart, by
// check_kv_ffn once the caller has checked heads against its own width.
Result<HeadsKvFfn> parse_heads_kv_ffn(const Problem& p);
// bad_input unless kv divides heads and ffn >= 1.
Status check_kv_ffn(const Problem& p, const HeadsKvFfn& w);

// The graph a registered block builds for `problem` (tests, tools); bad_input for an op that is
// no block.
Result<BlockGraph> block_graph(const Problem& problem);

}  // namespace dnnb
