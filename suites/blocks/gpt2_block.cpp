// gpt2_block: transformers' GPT2Block (docs/blocks.md): y = h + mlp(ln_2(h)), h = x + attn(ln_1(x)),
// attention causal over H heads of E/H dims, the MLP c_fc (4E), gelu_tanh, c_proj. GPT-2's Conv1D
// holds its weight [in, out] and computes x @ W + b: a linear node reading W through its
// transposed view (w.layout=transposed), so the state_dict tensors are the block's inputs as
// they are. Problem "BxSxE:heads=H[,eps=1e-5]"; inputs x [B, S, E] and the weights by their
// state_dict names; output y [B, S, E].
#include "suites/blocks/gpt2_block.h"

#include "suites/blocks/block_spec.h"

namespace dnnb {
namespace gpt2 {

Result<Dims> dims_of(const Problem& p) {
  Dims d;
  d.b = p.shape.at(0), d.s = p.shape.at(1), d.e = p.shape.at(2), d.m = d.b * d.s;
  auto heads = p.get_int("heads", 0);
  if (!heads) return heads.status();
  d.h = *heads;
  if (d.h < 1 || d.e % d.h != 0)
    return Status::bad_input(p.op + ": heads=" + std::to_string(d.h) + " does not divide E=" + std::to_string(d.e));
  d.d = d.e / d.h;
  d.eps = "eps=" + p.get("eps", "1e-5");
  return d;
}

void declare_forward(BlockBuilder& g, const Dims& d, bool saved) {
  const int64_t b = d.b, s = d.s, e = d.e, h = d.h, m = d.m;
  const std::string linear = ":bias=1,w.layout=transposed";
  g.input("x", {b, s, e});
  g.weight("ln_1.weight", {e}, BlockInit::scale);
  g.weight("ln_1.bias", {e}, BlockInit::shift);
  g.weight("attn.c_attn.weight", {e, 3 * e}, BlockInit::matrix, e);
  g.weight("attn.c_attn.bias", {3 * e}, BlockInit::shift);
  g.weight("attn.c_proj.weight", {e, e}, BlockInit::matrix, e);
  g.weight("attn.c_proj.bias", {e}, BlockInit::shift);
  g.weight("ln_2.weight", {e}, BlockInit::scale);
  g.weight("ln_2.bias", {e}, BlockInit::shift);
  g.weight("mlp.c_fc.weight", {e, 4 * e}, BlockInit::matrix, e);
  g.weight("mlp.c_fc.bias", {4 * e}, BlockInit::shift);
  g.weight("mlp.c_proj.weight", {4 * e, e}, BlockInit::matrix, 4 * e);
  g.weight("mlp.c_proj.bias", {e}, BlockInit::shift);

  // x is read by ln_1 and residual_1 as [B, S, E] (its layout, when the problem gives one, is theirs).
  g.node("ln_1", "layernorm", shape_text({b, s, e}) + ":" + d.eps + with(g.layout_of("x", "x"), ","),
         {"x", "ln_1.weight", "ln_1.bias"}, {"ln_1.out"});
  if (saved)
    g.node("ln_1.stats", "layernorm_stats", shape_text({b, s, e}) + ":" + d.eps + with(g.layout_of("x", "x"), ","), {"x"},
           {"ln_1.mean", "ln_1.rstd"});
  g.reshape("ln_1.rows", "ln_1.out", {m, e});
  g.transpose("attn.c_attn.w", "attn.c_attn.weight");
  g.node("attn.c_attn", "linear", shape_text({m, 3 * e, e}) + linear, {"ln_1.rows", "attn.c_attn.w", "attn.c_attn.bias"},
         {"attn.qkv"});
  g.reshape("attn.qkv.heads", "attn.qkv", {b, s, 3 * h, d.d});
  g.node("attn.split_heads", "permute", shape_text({b, s, 3 * h, d.d}) + ":perm=0213", {"attn.qkv.heads"}, {"attn.qkv.bhsd"});
  const char* parts[] = {"attn.q", "attn.k", "attn.v"};
  for (int64_t i = 0; i < 3; ++i)
    g.node(parts[i], "slice", shape_text({b, 3 * h, s, d.d}) + ":dim=1,len=" + std::to_string(h) + ",start=" + std::to_string(i * h),
           {"attn.qkv.bhsd"}, {std::string(parts[i]) + ".out"});
  g.node("attn.sdpa", "sdpa", shape_text({b, h, s, d.d}) + ":causal=1", {"attn.q.out", "attn.k.out", "attn.v.out"},
         {"attn.o", saved ? "attn.lse" : ""});
  g.node("attn.merge_heads", "permute", shape_text({b, h, s, d.d}) + ":perm=0213", {"attn.o"}, {"attn.o.bshd"});
  g.reshape("attn.o.rows", "attn.o.bshd", {m, e});
  g.transpose("attn.c_proj.w", "attn.c_proj.weight");
  g.node("attn.c_proj", "linear", shape_text({m, e, e}) + linear, {"attn.o.rows", "attn.c_proj.w", "attn.c_proj.bias"},
         {"attn.out"});
  g.reshape("attn.out.bse", "attn.out", {b, s, e});
  g.node("residual_1", "add", shape_text({b, s, e}) + with(g.layout_of("x", "b"), ":"), {"attn.out.bse", "x"}, {"h.bse"});
  g.reshape("h", "h.bse", {m, e});
  g.node("ln_2", "layernorm", shape_text({m, e}) + ":" + d.eps, {"h", "ln_2.weight", "ln_2.bias"}, {"ln_2.out"});
  if (saved) g.node("ln_2.stats", "layernorm_stats", shape_text({m, e}) + ":" + d.eps, {"h"}, {"ln_2.mean", "ln_2.rstd"});
  g.transpose("mlp.c_fc.w", "mlp.c_fc.weight");
  g.node("mlp.c_fc", "linear", shape_text({m, 4 * e, e}) + linear, {"ln_2.out", "mlp.c_fc.w", "mlp.c_fc.bias"}, {"mlp.fc"});
  g.node("mlp.act", "gelu_tanh", shape_text({m, 4 * e}), {"mlp.fc"}, {"mlp.act.out"});
  g.transpose("mlp.c_proj.w", "mlp.c_proj.weight");
}

}  // namespace gpt2

namespace {

Result<BlockGraph> build_gpt2_block(const Problem& p) {
  auto d = gpt2::dims_of(p);
  if (!d) return d.status();
  const int64_t b = d->b, s = d->s, e = d->e, m = d->m;
  BlockBuilder g(p);
  gpt2::declare_forward(g, *d, false);
  g.node("mlp.c_proj", "linear", shape_text({m, e, 4 * e}) + ":bias=1,w.layout=transposed",
         {"mlp.act.out", "mlp.c_proj.w", "mlp.c_proj.bias"}, {"mlp.out"});
  g.reshape("mlp.out.bse", "mlp.out", {b, s, e});
  g.node("residual_2", "add", shape_text({b, s, e}), {"mlp.out.bse", "h.bse"}, {"y"});
  g.output("y");
  return g.finish();
}

BlockDef gpt2_block() {
  BlockDef def;
  def.name = "gpt2_block";
  def.torch = "transformers GPT2Block(config)(x)[0]";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "eps"};
  // Odd sequence lengths and head dims that are no tile's multiple; x with padded rows.
  def.check_problems = {"1x7x64:heads=2", "2x17x64:heads=4", "1x33x96:heads=3", "3x11x80:heads=4",
                        "2x9x64:heads=2,x.layout=padded"};
  // The GPT-2 124M block at its context length, and the prefill size.
  def.bench_problems = {"4x1024x768:heads=12", "4x2048x768:heads=12"};
  def.build = build_gpt2_block;
  return def;
}

DNNB_REGISTER(register_block(gpt2_block()));

}  // namespace
}  // namespace dnnb
