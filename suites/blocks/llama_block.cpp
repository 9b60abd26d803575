// llama_block: transformers' LlamaDecoderLayer (docs/blocks.md): h = x + o_proj(attn(rope(q), rope(k), v)),
// q, k, v projections of rmsnorm(x) (input_layernorm), GQA over kv heads, causal; then
// y = h + down_proj(silu(gate_proj(n)) * up_proj(n)), n = rmsnorm(h) (post_attention_layernorm).
// The rotary angle is computed from the positions by the rope op (LlamaRotaryEmbedding's f32
// angle), so the block takes pos [B, S] where the layer takes position_embeddings.
// Problem "BxSxE:heads=H,kv=KV,ffn=F[,eps=1e-6][,theta=10000]"; head dim E/H; no biases.
#include "suites/blocks/llama_block.h"

#include "suites/blocks/attention_nodes.h"
#include "suites/blocks/block_spec.h"

namespace dnnb {
namespace llama {

Result<Dims> dims_of(const Problem& p) {
  Dims d;
  d.b = p.shape.at(0), d.s = p.shape.at(1), d.e = p.shape.at(2), d.m = d.b * d.s;
  auto widths = parse_heads_kv_ffn(p);
  if (!widths) return widths.status();
  d.h = widths->h, d.kv = widths->kv, d.f = widths->f;
  if (d.h < 1 || d.e % d.h != 0)
    return Status::bad_input(p.op + ": heads=" + std::to_string(d.h) + " does not divide E=" + std::to_string(d.e));
  DNNB_TRY(check_kv_ffn(p, *widths));
  d.d = d.e / d.h;
  d.eps = ":eps=" + p.get("eps", "1e-6");
  d.theta = ":theta=" + p.get("theta", "10000");
  return d;
}

void declare_weights(BlockBuilder& g, const Dims& dm) {
  const int64_t e = dm.e, h = dm.h, kv = dm.kv, f = dm.f, d = dm.d;
  g.weight("input_layernorm.weight", {e}, BlockInit::scale);
  g.weight("self_attn.q_proj.weight", {h * d, e}, BlockInit::matrix, e);
  g.weight("self_attn.k_proj.weight", {kv * d, e}, BlockInit::matrix, e);
  g.weight("self_attn.v_proj.weight", {kv * d, e}, BlockInit::matrix, e);
  g.weight("self_attn.o_proj.weight", {e, h * d}, BlockInit::matrix, h * d);
  g.weight("post_attention_layernorm.weight", {e}, BlockInit::scale);
  g.weight("mlp.gate_proj.weight", {f, e}, BlockInit::matrix, e);
  g.weight("mlp.up_proj.weight", {f, e}, BlockInit::matrix, e);
  g.weight("mlp.down_proj.weight", {e, f}, BlockInit::matrix, f);
}

void declare_forward(BlockBuilder& g, const Dims& dm, bool saved) {
  const int64_t b = dm.b, s = dm.s, e = dm.e, h = dm.h, kv = dm.kv, f = dm.f, d = dm.d, m = dm.m;
  g.input("x", {b, s, e});
  g.input("pos", {b, s}, DType::i64, BlockInit::positions);
  declare_weights(g, dm);

  // x is read by input_layernorm and residual_1 as [B, S, E] (its layout, when the problem gives one, is theirs).
  g.node("input_layernorm", "rmsnorm", shape_text({b, s, e}) + dm.eps + with(g.layout_of("x", "x"), ","),
         {"x", "input_layernorm.weight"}, {"n1.bse"});
  if (saved)
    g.node("input_layernorm.stats", "rmsnorm_stats", shape_text({b, s, e}) + dm.eps + with(g.layout_of("x", "x"), ","), {"x"},
           {"input_layernorm.rstd"});
  g.reshape("n1", "n1.bse", {m, e});
  add_qkv_heads(g, b, s, e, h, kv, d, "n1", "pos", dm.theta);
  g.node("self_attn.sdpa", "sdpa", shape_text({b, h, s, d}) + ":causal=1,kv=" + std::to_string(kv),
         {"self_attn.q.rotated", "self_attn.k.rotated", "self_attn.v"}, {"self_attn.o", saved ? "self_attn.lse" : ""});
  add_attention_output(g, b, s, e, h, d);
  g.reshape("self_attn.out.bse", "self_attn.out", {b, s, e});
  g.node("residual_1", "add", shape_text({b, s, e}) + with(g.layout_of("x", "b"), ":"), {"self_attn.out.bse", "x"}, {"h.bse"});
  g.reshape("h", "h.bse", {m, e});
  g.node("post_attention_layernorm", "rmsnorm", shape_text({m, e}) + dm.eps, {"h", "post_attention_layernorm.weight"}, {"n2"});
  if (saved)
    g.node("post_attention_layernorm.stats", "rmsnorm_stats", shape_text({m, e}) + dm.eps, {"h"},
           {"post_attention_layernorm.rstd"});
  g.node("mlp.gate_proj", "linear", shape_text({m, f, e}), {"n2", "mlp.gate_proj.weight"}, {"mlp.gate"});
  g.node("mlp.up_proj", "linear", shape_text({m, f, e}), {"n2", "mlp.up_proj.weight"}, {"mlp.up"});
  g.node("mlp.act", "swiglu", shape_text({m, f}), {"mlp.gate", "mlp.up"}, {"mlp.act.out"});
}

}  // namespace llama

namespace {

Result<BlockGraph> build_llama_block(const Problem& p) {
  auto d = llama::dims_of(p);
  if (!d) return d.status();
  BlockBuilder g(p);
  llama::declare_forward(g, *d, false);
  g.node("mlp.down_proj", "linear", shape_text({d->m, d->e, d->f}), {"mlp.act.out", "mlp.down_proj.weight"},
         {"mlp.out"});
  g.reshape("mlp.out.bse", "mlp.out", {d->b, d->s, d->e});
  g.node("residual_2", "add", shape_text({d->b, d->s, d->e}), {"mlp.out.bse", "h.bse"}, {"y"});
  g.output("y");
  return g.finish();
}

BlockDef llama_block() {
  BlockDef def;
  def.name = "llama_block";
  def.torch = "transformers LlamaDecoderLayer(config, 0)(x, position_embeddings=rotary(x, pos))";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "kv", "ffn", "eps", "theta"};
  // GQA and MQA, odd lengths, FFN widths that are no tile's multiple; x with padded rows.
  def.check_problems = {"1x7x64:ffn=172,heads=4,kv=2", "2x17x64:ffn=176,heads=4,kv=2", "1x33x128:ffn=344,heads=4,kv=1",
                        "2x13x96:ffn=260,heads=3,kv=3,theta=500000", "2x9x64:ffn=176,heads=4,kv=2,x.layout=padded"};
  // A Llama-3-8B layer: prefill of 4 x 2048 and of 1 x 2048 tokens (bf16).
  def.bench_problems = {{"4x2048x4096:eps=1e-5,ffn=14336,heads=32,kv=8,theta=500000", {DType::bf16}},
                        {"1x2048x4096:eps=1e-5,ffn=14336,heads=32,kv=8,theta=500000", {DType::bf16}}};
  def.build = build_llama_block;
  return def;
}

DNNB_REGISTER(register_block(llama_block()));

}  // namespace
}  // namespace dnnb
