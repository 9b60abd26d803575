// zamba2_mlp: transformers' Zamba2MLP (docs/blocks.md), the feed-forward of Zamba 2's shared
// attention block: gu = gate_up_proj(x) + B(A(x)), where A [R, E] and B [2F, R] are the
// un-tied low-rank adapter of this hybrid layer (gate_up_proj_adapter_list.<i>, a LoRA beside
// the tied projection), then y = down_proj(gelu(gu[:, :F]) * gu[:, F:]) (torch.chunk's halves;
// hidden_act "gelu", erf's). The adapter list has one entry per hybrid layer; the block is the
// MLP of a model with one, entry 0. No biases (add_bias_linear false).
// Problem "BxSxE:ffn=F[,rank=R (adapter_rank, default 128)]".
#include "suites/blocks/zamba2_mlp.h"

#include <string>

#include "suites/blocks/block_spec.h"
#include "suites/blocks/graph_text.h"

namespace dnnb {
void zamba2_mlp_weights(BlockBuilder& g, const std::string& prefix, int64_t e, int64_t f, int64_t rank) {
  g.weight(prefix + "gate_up_proj.weight", {2 * f, e}, BlockInit::matrix, e);
  g.weight(prefix + "down_proj.weight", {e, f}, BlockInit::matrix, f);
  g.weight(prefix + "gate_up_proj_adapter_list.0.0.weight", {rank, e}, BlockInit::matrix, e);
  g.weight(prefix + "gate_up_proj_adapter_list.0.1.weight", {2 * f, rank}, BlockInit::matrix, rank);
}

void zamba2_mlp_nodes(BlockBuilder& g, const std::string& prefix, const std::string& in, const std::string& out,
                      int64_t m, int64_t e, int64_t f, int64_t rank) {
  const std::string adapter = prefix + "gate_up_proj_adapter_list.0";
  g.node(prefix + "gate_up_proj", "linear", shape_text({m, 2 * f, e}), {in, prefix + "gate_up_proj.weight"}, {prefix + "gate_up"});
  g.node(adapter + ".0", "linear", shape_text({m, rank, e}), {in, adapter + ".0.weight"}, {adapter + ".low"});
  g.node(adapter + ".1", "linear", shape_text({m, 2 * f, rank}), {adapter + ".low", adapter + ".1.weight"}, {adapter + ".out"});
  g.node(prefix + "adapter_add", "add", shape_text({m, 2 * f}), {prefix + "gate_up", adapter + ".out"}, {prefix + "gate_up.adapted"});
  g.node(prefix + "chunk.gate", "slice", shape_text({m, 2 * f}) + ":dim=1,len=" + std::to_string(f) + ",start=0",
         {prefix + "gate_up.adapted"}, {prefix + "gate"});
  g.node(prefix + "chunk.up", "slice", shape_text({m, 2 * f}) + ":dim=1,len=" + std::to_string(f) + ",start=" + std::to_string(f),
         {prefix + "gate_up.adapted"}, {prefix + "up"});
  g.node(prefix + "act_fn", "gelu", shape_text({m, f}), {prefix + "gate"}, {prefix + "act"});
  g.node(prefix + "gate_times_up", "mul", shape_text({m, f}), {prefix + "act", prefix + "up"}, {prefix + "hidden"});
  g.node(prefix + "down_proj", "linear", shape_text({m, e, f}), {prefix + "hidden", prefix + "down_proj.weight"}, {out});
}

namespace {

Result<BlockGraph> build_zamba2_mlp(const Problem& p) {
  const int64_t b = p.shape.at(0), s = p.shape.at(1), e = p.shape.at(2), m = b * s;
  auto ffn = p.get_int("ffn", 0);
  if (!ffn) return ffn.status();
  auto rank = p.get_int("rank", 128);
  if (!rank) return rank.status();
  if (*ffn < 1) return Status::bad_input(p.op + ": ffn=" + std::to_string(*ffn) + ": the MLP width must be given (ffn=F >= 1)");
  if (*rank < 1) return Status::bad_input(p.op + ": rank=" + std::to_string(*rank) + ": the adapter rank must be at least 1");
  BlockBuilder g(p);
  g.input("x", {b, s, e});
  zamba2_mlp_weights(g, "", e, *ffn, *rank);
  // linear reads x as [M, E] rows, a view only of contiguous storage: an x the problem lays out
  // otherwise (x.layout=padded) is first copied (an identity permute, which reads any layout).
  std::string rows_of = "x";
  const std::string layout = g.layout_of("x", "x");
  if (!layout.empty()) {
    g.node("x.contiguous", "permute", shape_text({b, s, e}) + ":perm=012," + layout, {"x"}, {"x.copy"});
    rows_of = "x.copy";
  }
  g.reshape("x.rows", rows_of, {m, e});
  zamba2_mlp_nodes(g, "", "x.rows", "down_proj.out", m, e, *ffn, *rank);
  // A block's output is a node's own (core/block.h), and linear writes [M, E]: an identity
  // permute gives y its [B, S, E] (one copy of y, which torch's view does not make).
  g.reshape("down_proj.bse", "down_proj.out", {b, s, e});
  g.node("output", "permute", shape_text({b, s, e}) + ":perm=012", {"down_proj.bse"}, {"y"});
  g.output("y");
  return g.finish();
}

BlockDef zamba2_mlp() {
  BlockDef def;
  def.name = "zamba2_mlp";
  def.torch = "transformers Zamba2MLP(config, num_fwd_mem_blocks=1, block_id=0)(x, layer_idx=0)";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"ffn", "rank"};
  // Odd token counts, widths and ranks that are no tile's multiple; x with padded rows.
  def.check_problems = {"1x7x64:ffn=96,rank=8", "2x17x64:ffn=176,rank=16", "1x33x96:ffn=260,rank=5",
                        "2x9x64:ffn=96,rank=8,x.layout=padded"};
  // Zamba2-2.7B's shared MLP (hidden 2560, FFN 4 x 2560, adapter rank 128), prefill of 4 x 2048
  // and of 1 x 2048 tokens.
  def.bench_problems = {{"4x2048x2560:ffn=10240,rank=128", {DType::bf16}}, {"1x2048x2560:ffn=10240,rank=128", {DType::bf16}}};
  def.build = build_zamba2_mlp;
  return def;
}

DNNB_REGISTER(register_block(zamba2_mlp()));

}  // namespace
}  // namespace dnnb
