// gpt2_block_bwd: the training step of transformers' GPT2Block (docs/blocks.md, "The training
// step"): for x and the upstream gradient dy of y, the input gradient dx and the gradient of
// every weight, as torch autograd gives them (x.grad and each parameter's .grad).
// The graph is gpt2_block's forward, keeping what the backward reads (each layernorm's mean
// and rstd, sdpa's o and lse), then the backward nodes in reverse order:
//   mlp.c_proj  linear_bwd -> d act, dW^T, db     mlp.act  gelu_bwd (tanh)
//   mlp.c_fc    linear_bwd -> d ln_2.out, ...     ln_2     layernorm_bwd -> d h (norm path)
//   residual_2  add: d h = dy + the norm path     attn.c_proj linear_bwd -> d o
//   attn.sdpa   sdpa_bwd -> dq, dk, dv, joined by two concats and a permute into d qkv
//   attn.c_attn linear_bwd -> d ln_1.out          ln_1     layernorm_bwd
//   residual_1  add: dx = d h + the norm path
// A Conv1D weight W [in, out] is read by linear_bwd through its transposed view, whose dw is
// [out, in]: a permute writes W.grad [in, out]. y itself is not computed (no node reads it).
// Problem "BxSxE:heads=H[,eps=1e-5]"; inputs x, the 12 weights, dy [B, S, E]; outputs dx and
// "<weight>.grad" for each weight in state_dict order.
#include "suites/blocks/block_spec.h"
#include "suites/blocks/gpt2_block.h"

namespace dnnb {
namespace {

Result<BlockGraph> build_gpt2_block_bwd(const Problem& p) {
  auto dims = gpt2::dims_of(p);
  if (!dims) return dims.status();
  const int64_t b = dims->b, s = dims->s, e = dims->e, h = dims->h, d = dims->d, m = dims->m;
  BlockBuilder g(p);
  gpt2::declare_forward(g, *dims, true);
  g.input("dy", {b, s, e});
  g.reshape("dy.rows", "dy", {m, e});

  // A Conv1D layer's backward: dx and db from linear_bwd, W.grad [in, out] from its dw [out, in].
  auto conv1d_bwd = [&](const std::string& layer, int64_t in, int64_t out, const std::string& x, const std::string& dy,
                        const std::string& dx) {
    g.node(layer + ".bwd", "linear_bwd", shape_text({m, out, in}) + ":bias=1,w.layout=transposed",
           {x, layer + ".w", dy}, {dx, layer + ".dw", layer + ".bias.grad"});
    g.node(layer + ".weight_grad", "permute", shape_text({out, in}) + ":perm=10", {layer + ".dw"}, {layer + ".weight.grad"});
  };

  conv1d_bwd("mlp.c_proj", 4 * e, e, "mlp.act.out", "dy.rows", "d.mlp.act.out");
  g.node("mlp.act.bwd", "gelu_bwd", shape_text({m, 4 * e}) + ":approximate=tanh", {"mlp.fc", "d.mlp.act.out"}, {"d.mlp.fc"});
  conv1d_bwd("mlp.c_fc", e, 4 * e, "ln_2.out", "d.mlp.fc", "d.ln_2.out");
  g.node("ln_2.bwd", "layernorm_bwd", shape_text({m, e}) + ":" + dims->eps,
         {"h", "ln_2.weight", "d.ln_2.out", "ln_2.mean", "ln_2.rstd"}, {"d.h.norm", "ln_2.weight.grad", "ln_2.bias.grad"});
  g.node("residual_2.bwd", "add", shape_text({m, e}), {"d.h.norm", "dy.rows"}, {"d.h"});

  conv1d_bwd("attn.c_proj", e, e, "attn.o.rows", "d.h", "d.attn.o.rows");
  g.reshape("d.attn.o.bshd", "d.attn.o.rows", {b, s, h, d});
  g.node("attn.merge_heads.bwd", "permute", shape_text({b, s, h, d}) + ":perm=0213", {"d.attn.o.bshd"}, {"d.attn.o"});
  g.node("attn.sdpa.bwd", "sdpa_bwd", shape_text({b, h, s, d}) + ":causal=1",
         {"attn.q.out", "attn.k.out", "attn.v.out", "attn.o", "d.attn.o", "attn.lse"}, {"d.attn.q", "d.attn.k", "d.attn.v"});
  // The slices' backward: q, k and v side by side again along the heads, then split_heads'.
  g.node("attn.qk.bwd", "concat", shape_text({b, h, s, d}) + ":dim=1", {"d.attn.q", "d.attn.k"}, {"d.attn.qk"});
  g.node("attn.qkv.bwd", "concat", shape_text({b, 2 * h, s, d}) + ":dim=1,b=" + shape_text({b, h, s, d}),
         {"d.attn.qk", "d.attn.v"}, {"d.attn.qkv.bhsd"});
  g.node("attn.split_heads.bwd", "permute", shape_text({b, 3 * h, s, d}) + ":perm=0213", {"d.attn.qkv.bhsd"},
         {"d.attn.qkv.heads"});
  g.reshape("d.attn.qkv", "d.attn.qkv.heads", {m, 3 * e});
  conv1d_bwd("attn.c_attn", e, 3 * e, "ln_1.rows", "d.attn.qkv", "d.ln_1.rows");
  g.reshape("d.ln_1.out", "d.ln_1.rows", {b, s, e});
  g.node("ln_1.bwd", "layernorm_bwd", shape_text({b, s, e}) + ":" + dims->eps + with(g.layout_of("x", "x"), ","),
         {"x", "ln_1.weight", "d.ln_1.out", "ln_1.mean", "ln_1.rstd"}, {"d.x.norm", "ln_1.weight.grad", "ln_1.bias.grad"});
  g.reshape("d.h.bse", "d.h", {b, s, e});
  g.node("residual_1.bwd", "add", shape_text({b, s, e}), {"d.x.norm", "d.h.bse"}, {"dx"});

  g.output("dx");
  for (const char* w : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                        "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                        "mlp.c_proj.weight", "mlp.c_proj.bias"})
    g.output(std::string(w) + ".grad");
  return g.finish();
}

BlockDef gpt2_block_bwd() {
  BlockDef def;
  def.name = "gpt2_block_bwd";
  def.torch = "torch.autograd.grad(GPT2Block(config)(x)[0], (x, *parameters), dy)";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "eps"};
  // gpt2_block's: odd sequence lengths and head dims that are no tile's multiple; x with padded rows;
  // and GPT-2's head dim 64, where sdpa_bwd takes the GPUs' 16-bit tensor-core kernels.
  def.check_problems = {"1x7x64:heads=2", "2x17x64:heads=4", "1x33x96:heads=3", "3x11x80:heads=4",
                        "2x9x64:heads=2,x.layout=padded", "2x19x128:heads=2"};
  // A GPT-2 124M block's training step at llm.c's 4 x 1024 tokens, and at 4 x 2048.
  def.bench_problems = {"4x1024x768:heads=12", "4x2048x768:heads=12"};
  def.build = build_gpt2_block_bwd;
  return def;
}

DNNB_REGISTER(register_block(gpt2_block_bwd()));

}  // namespace
}  // namespace dnnb
