// gemma2_layer: transformers' Gemma2DecoderLayer (docs/blocks.md), a global (full causal) layer,
// or a local one with `window=W` (the sliding window of config.sliding_window):
//   h = x + post_attention_layernorm(o_proj(attn(rope(q), rope(k), v))), q, k, v projections of
//       input_layernorm(x);
//   y = h + post_feedforward_layernorm(down_proj(gelu_tanh(gate_proj(n)) * up_proj(n))),
//       n = pre_feedforward_layernorm(h).
// Every norm is Gemma's RMSNorm, x / sqrt(mean(x^2) + eps) * (1 + w) in f32 (rmsnorm
// form=gemma). The attention scales scores by query_pre_attn_scalar^-0.5 (not head_dim^-0.5),
// caps them at softcap tanh(s / softcap) (attn_logit_softcapping) before the causal (and
// window) mask, and uses GQA over kv heads. The head dim is its own parameter: Gemma-2-2B has
// 8 heads of 256 in a hidden of 2304. The rotary angle comes from the positions (the rope op,
// Gemma2RotaryEmbedding's f32 angle), so the block takes pos [B, S] where the layer takes
// position_embeddings.
// Problem "BxSxE:heads=H,kv=KV,head_dim=D,ffn=F[,window=W][,qscale=Q (default D)][,softcap=C
// (default 50; 0: none)][,eps=1e-6][,theta=10000]"; no biases.
#include <cmath>
#include <string>

#include "suites/blocks/attention_nodes.h"
#include "suites/blocks/block_spec.h"
#include "suites/blocks/gemma2_decode.h"
#include "suites/blocks/graph_text.h"

namespace dnnb {
namespace {

Result<BlockGraph> build_gemma2_layer(const Problem& p) {
  const int64_t b = p.shape.at(0), s = p.shape.at(1), e = p.shape.at(2), m = b * s;
  auto widths = parse_heads_kv_ffn(p);
  if (!widths) return widths.status();
  auto head_dim = p.get_int("head_dim", 0);
  if (!head_dim) return head_dim.status();
  const int64_t h = widths->h, kv = widths->kv, f = widths->f, d = *head_dim;
  if (h < 1) return Status::bad_input(p.op + ": heads=" + std::to_string(h) + " must be at least 1");
  DNNB_TRY(check_kv_ffn(p, *widths));
  if (d < 2 || d % 2 != 0) return Status::bad_input(p.op + ": head_dim=" + std::to_string(d) + ": must be given, even and at least 2");
  auto qscale = p.get_double("qscale", static_cast<double>(d));
  if (!qscale) return qscale.status();
  if (!(*qscale > 0)) return Status::bad_input(p.op + ": qscale=" + p.get("qscale") + " (query_pre_attn_scalar) must be positive");
  auto softcap = p.get_double("softcap", 50.0);
  if (!softcap) return softcap.status();
  if (!(*softcap >= 0)) return Status::bad_input(p.op + ": softcap=" + p.get("softcap") + " must be 0 (none) or positive");
  const std::string eps = ":eps=" + p.get("eps", "1e-6") + ",form=gemma";
  const std::string theta = ":theta=" + p.get("theta", "10000");
  std::string attention = ":causal=1,kv=" + std::to_string(kv) + ",scale=" + number_text(1.0 / std::sqrt(*qscale));
  if (*softcap > 0) attention += ",softcap=" + p.get("softcap", "50");
  if (p.has("window")) attention += ",window=" + p.get("window");

  BlockBuilder g(p);
  g.input("x", {b, s, e});
  g.input("pos", {b, s}, DType::i64, BlockInit::positions);
  gemma2::declare_layer_weights(g, "", e, h, kv, d, f);

  // x is read by input_layernorm and residual_1 as [B, S, E] (its layout, when the problem gives one, is theirs).
  g.node("input_layernorm", "rmsnorm", shape_text({b, s, e}) + eps + with(g.layout_of("x", "x"), ","), {"x", "input_layernorm.weight"},
         {"n1.bse"});
  g.reshape("n1", "n1.bse", {m, e});
  add_qkv_heads(g, b, s, e, h, kv, d, "n1", "pos", theta);
  g.node("self_attn.sdpa", "sdpa", shape_text({b, h, s, d}) + attention, {"self_attn.q.rotated", "self_attn.k.rotated", "self_attn.v"},
         {"self_attn.o", ""});
  add_attention_output(g, b, s, e, h, d);
  g.node("post_attention_layernorm", "rmsnorm", shape_text({m, e}) + eps, {"self_attn.out", "post_attention_layernorm.weight"},
         {"attn.normed"});
  g.reshape("attn.normed.bse", "attn.normed", {b, s, e});
  g.node("residual_1", "add", shape_text({b, s, e}) + with(g.layout_of("x", "b"), ":"), {"attn.normed.bse", "x"}, {"h.bse"});
  g.reshape("h", "h.bse", {m, e});
  g.node("pre_feedforward_layernorm", "rmsnorm", shape_text({m, e}) + eps, {"h", "pre_feedforward_layernorm.weight"}, {"n2"});
  g.node("mlp.gate_proj", "linear", shape_text({m, f, e}), {"n2", "mlp.gate_proj.weight"}, {"mlp.gate"});
  g.node("mlp.up_proj", "linear", shape_text({m, f, e}), {"n2", "mlp.up_proj.weight"}, {"mlp.up"});
  g.node("mlp.act", "geglu", shape_text({m, f}), {"mlp.gate", "mlp.up"}, {"mlp.act.out"});
  g.node("mlp.down_proj", "linear", shape_text({m, e, f}), {"mlp.act.out", "mlp.down_proj.weight"}, {"mlp.out"});
  g.node("post_feedforward_layernorm", "rmsnorm", shape_text({m, e}) + eps, {"mlp.out", "post_feedforward_layernorm.weight"},
         {"mlp.normed"});
  g.reshape("mlp.normed.bse", "mlp.normed", {b, s, e});
  g.node("residual_2", "add", shape_text({b, s, e}), {"mlp.normed.bse", "h.bse"}, {"y"});
  g.output("y");
  return g.finish();
}

BlockDef gemma2_layer() {
  BlockDef def;
  def.name = "gemma2_layer";
  def.torch = "transformers Gemma2DecoderLayer(config, 0)(x, position_embeddings=rotary(x, pos), attention_mask=causal[+window])";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "kv", "head_dim", "ffn", "window", "qscale", "softcap", "eps", "theta"};
  // Global and local layers; H x D != E (as Gemma-2-2B's 8 x 256 in 2304), a window shorter
  // than the sequence, odd lengths and widths, a query_pre_attn_scalar other than D, no
  // softcap, x with padded rows.
  def.check_problems = {"1x7x64:ffn=172,head_dim=16,heads=4,kv=2",
                        "2x17x64:ffn=176,head_dim=32,heads=4,kv=2",
                        "1x33x64:ffn=176,head_dim=16,heads=4,kv=2,window=16",
                        "2x19x96:ffn=260,head_dim=24,heads=3,kv=1,qscale=32,softcap=20,window=7",
                        "1x13x48:ffn=100,head_dim=16,heads=2,kv=2,softcap=0,theta=500000",
                        "2x9x64:ffn=176,head_dim=16,heads=4,kv=2,window=4,x.layout=padded"};
  // A Gemma-2-2B layer (hidden 2304, 8/4 heads of 256, FFN 9216), prefill of 4 x 2048 tokens:
  // global, and local with its 4096 window (wider than the prompt: the same keys, the window's path).
  def.bench_problems = {{"4x2048x2304:ffn=9216,head_dim=256,heads=8,kv=4,qscale=256", {DType::bf16}},
                        {"4x2048x2304:ffn=9216,head_dim=256,heads=8,kv=4,qscale=256,window=4096", {DType::bf16}}};
  def.build = build_gemma2_layer;
  return def;
}

DNNB_REGISTER(register_block(gemma2_layer()));

}  // namespace
}  // namespace dnnb
