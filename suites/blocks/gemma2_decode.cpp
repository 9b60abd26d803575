// gemma2_decode: transformers' Gemma2DecoderLayer at one new token per sequence with a KV cache
// (docs/blocks.md, "The decode step"), a global layer or a local one with `window=W`: the layer of
// gemma2_layer, where the token's k (after rope) and v are stored into the caches at pos[b] and
// its query attends to the cache through the `kv_cache` op with Gemma 2's attention: scale
// query_pre_attn_scalar^-0.5, softcap c tanh(s / c) (attn_logit_softcapping), and for a local
// layer only positions > pos[b] - W (the sliding window), as a DynamicCache's update and the
// eager attention over its keys compute it. The projections are `gemv` nodes (one token's
// product is bound by reading the weight); the four norms are Gemma's (1 + w) RMSNorm
// (rmsnorm form=gemma); the MLP is geglu (gelu_tanh(gate) * up).
// Problem "Bx1xE:heads=H,kv=KV,head_dim=D,ffn=F,ctx=C[,window=W][,qscale=Q (default D)]
// [,softcap=c (default 50; 0: none)][,steps=3][,lens=ragged|full][,eps=1e-6][,theta=10000]":
// B sequences of one token, caches of C positions. steps and lens are kv_cache's: sequence b
// writes position pos0(b) + step (kv_cache_desc.h); random caches hold values from the window's
// first position up to pos0(b) and NaN elsewhere (a read past a length or before a window shows).
// Inputs: x [B, 1, E], pos [B] i32, k_cache and v_cache [B, KV, C, D] (state, updated in place),
// the 11 weights by their state_dict names; output y [B, 1, E].
#include <cmath>
#include <string>

#include "suites/blocks/block_spec.h"
#include "suites/blocks/decode_step.h"
#include "suites/blocks/gemma2_decode.h"
#include "suites/blocks/graph_text.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb {
namespace gemma2 {

Result<DecodeDims> decode_dims(const Problem& p, int64_t ctx, const std::string& steps, const std::string& lens,
                               const std::string& window) {
  DecodeDims x;
  if (p.shape.size() != 3 || p.shape[1] != 1)
    return Status::bad_input(p.op + ": a decode step takes one token per sequence (Bx1xE), got " + shape_to_string(p.shape));
  x.b = p.shape[0];
  x.e = p.shape[2];
  auto widths = parse_heads_kv_ffn(p);
  if (!widths) return widths.status();
  auto head_dim = p.get_int("head_dim", 0);
  if (!head_dim) return head_dim.status();
  x.h = widths->h;
  x.kv = widths->kv;
  x.f = widths->f;
  x.d = *head_dim;
  if (x.h < 1) return Status::bad_input(p.op + ": heads=" + std::to_string(x.h) + " must be at least 1");
  DNNB_TRY(check_kv_ffn(p, *widths));
  if (x.d < 2 || x.d % 2 != 0)
    return Status::bad_input(p.op + ": head_dim=" + std::to_string(x.d) + ": must be given, even and at least 2");
  if (ctx < 1) return Status::bad_input(p.op + ": ctx=C, the cache's positions, must be given (C >= 1)");
  auto qscale = p.get_double("qscale", static_cast<double>(x.d));
  if (!qscale) return qscale.status();
  if (!(*qscale > 0)) return Status::bad_input(p.op + ": qscale=" + p.get("qscale") + " (query_pre_attn_scalar) must be positive");
  auto softcap = p.get_double("softcap", 50.0);
  if (!softcap) return softcap.status();
  if (!(*softcap >= 0)) return Status::bad_input(p.op + ": softcap=" + p.get("softcap") + " must be 0 (none) or positive");
  // kv_cache's parameters in sorted order (a problem's text round-trips).
  x.cache = shape_text({x.b, x.h, ctx, x.d}) + ":kv=" + std::to_string(x.kv) + ",lens=" + lens +
            ",scale=" + number_text(1.0 / std::sqrt(*qscale));
  if (*softcap > 0) x.cache += ",softcap=" + p.get("softcap", "50");
  x.cache += ",steps=" + steps;
  if (!window.empty()) x.cache += ",window=" + window;
  x.eps = ":eps=" + p.get("eps", "1e-6") + ",form=gemma";
  x.theta = ":theta=" + p.get("theta", "10000");
  return x;
}

void declare_layer_weights(BlockBuilder& g, const std::string& at, int64_t e, int64_t h, int64_t kv, int64_t d, int64_t f) {
  // Gemma's norm weights are stored as w in (1 + w): near 0 (shift), not near 1.
  g.weight(at + "input_layernorm.weight", {e}, BlockInit::shift);
  g.weight(at + "self_attn.q_proj.weight", {h * d, e}, BlockInit::matrix, e);
  g.weight(at + "self_attn.k_proj.weight", {kv * d, e}, BlockInit::matrix, e);
  g.weight(at + "self_attn.v_proj.weight", {kv * d, e}, BlockInit::matrix, e);
  g.weight(at + "self_attn.o_proj.weight", {e, h * d}, BlockInit::matrix, h * d);
  g.weight(at + "mlp.gate_proj.weight", {f, e}, BlockInit::matrix, e);
  g.weight(at + "mlp.up_proj.weight", {f, e}, BlockInit::matrix, e);
  g.weight(at + "mlp.down_proj.weight", {e, f}, BlockInit::matrix, f);
  g.weight(at + "post_attention_layernorm.weight", {e}, BlockInit::shift);
  g.weight(at + "pre_feedforward_layernorm.weight", {e}, BlockInit::shift);
  g.weight(at + "post_feedforward_layernorm.weight", {e}, BlockInit::shift);
}

void add_decode_layer(BlockBuilder& g, const std::string& at, const DecodeDims& dm, const std::string& x,
                      const std::string& pos, const std::string& y, const std::string& x_norm_layout,
                      const std::string& x_add_layout) {
  const int64_t b = dm.b, e = dm.e, h = dm.h, kv = dm.kv, f = dm.f, d = dm.d;
  const std::string batch = ":batch=" + std::to_string(b);
  declare_layer_weights(g, at, e, h, kv, d, f);

  g.node(at + "input_layernorm", "rmsnorm", shape_text({b, 1, e}) + dm.eps + with(x_norm_layout, ","),
         {x, at + "input_layernorm.weight"}, {at + "n1.b1e"});
  g.reshape(at + "n1", at + "n1.b1e", {b, e});
  // rope reads positions [B, S]: the one token's, as a view of pos.
  g.reshape(at + "pos.bs", pos, {b, 1});
  for (const auto& [name, nh] : {std::pair<std::string, int64_t>{"q", h}, {"k", kv}, {"v", kv}}) {
    const std::string proj = at + "self_attn." + name + "_proj";
    g.node(proj, "gemv", shape_text({nh * d, e}) + batch, {proj + ".weight", at + "n1"}, {proj + ".out"});
    // One token: [B, heads x D] is already [B, heads, 1, D] in memory (no permute).
    g.reshape(at + "self_attn." + name, proj + ".out", {b, nh, 1, d});
    if (name != "v")
      g.node(at + "self_attn." + name + "_rope", "rope", shape_text({b, nh, 1, d}) + dm.theta + ",pos.dt=i32",
             {at + "self_attn." + name, at + "pos.bs"}, {at + "self_attn." + name + ".rotated"});
  }
  g.reshape(at + "self_attn.q.token", at + "self_attn.q.rotated", {b, h, d});
  g.reshape(at + "self_attn.k.token", at + "self_attn.k.rotated", {b, kv, d});
  g.reshape(at + "self_attn.v.token", at + "self_attn.v_proj.out", {b, kv, d});
  g.node(at + "self_attn.kv_cache", "kv_cache", dm.cache,
         {at + "self_attn.q.token", at + "self_attn.k.token", at + "self_attn.v.token", pos, at + "k_cache",
          at + "v_cache"},
         {at + "self_attn.o"});
  g.reshape(at + "self_attn.o.rows", at + "self_attn.o", {b, h * d});
  g.node(at + "self_attn.o_proj", "gemv", shape_text({e, h * d}) + batch,
         {at + "self_attn.o_proj.weight", at + "self_attn.o.rows"}, {at + "self_attn.out"});
  g.node(at + "post_attention_layernorm", "rmsnorm", shape_text({b, e}) + dm.eps,
         {at + "self_attn.out", at + "post_attention_layernorm.weight"}, {at + "attn.normed"});
  g.reshape(at + "attn.normed.b1e", at + "attn.normed", {b, 1, e});
  g.node(at + "residual_1", "add", shape_text({b, 1, e}) + with(x_add_layout, ":"),
         {at + "attn.normed.b1e", x}, {at + "h.b1e"});
  g.reshape(at + "h", at + "h.b1e", {b, e});
  g.node(at + "pre_feedforward_layernorm", "rmsnorm", shape_text({b, e}) + dm.eps,
         {at + "h", at + "pre_feedforward_layernorm.weight"}, {at + "n2"});
  g.node(at + "mlp.gate_proj", "gemv", shape_text({f, e}) + batch, {at + "mlp.gate_proj.weight", at + "n2"}, {at + "mlp.gate"});
  g.node(at + "mlp.up_proj", "gemv", shape_text({f, e}) + batch, {at + "mlp.up_proj.weight", at + "n2"}, {at + "mlp.up"});
  g.node(at + "mlp.act", "geglu", shape_text({b, f}), {at + "mlp.gate", at + "mlp.up"}, {at + "mlp.act.out"});
  g.node(at + "mlp.down_proj", "gemv", shape_text({e, f}) + batch, {at + "mlp.down_proj.weight", at + "mlp.act.out"},
         {at + "mlp.out"});
  g.node(at + "post_feedforward_layernorm", "rmsnorm", shape_text({b, e}) + dm.eps,
         {at + "mlp.out", at + "post_feedforward_layernorm.weight"}, {at + "mlp.normed"});
  g.reshape(at + "mlp.normed.b1e", at + "mlp.normed", {b, 1, e});
  g.node(at + "residual_2", "add", shape_text({b, 1, e}), {at + "mlp.normed.b1e", at + "h.b1e"}, {y});
}

}  // namespace gemma2

namespace {

Result<gemma2::DecodeDims> dims_of(const Problem& p) {
  auto ctx = p.get_int("ctx", 0);
  if (!ctx) return ctx.status();
  return gemma2::decode_dims(p, *ctx, p.get("steps", "3"), p.get("lens", "ragged"), p.has("window") ? p.get("window") : "");
}

Result<ops::KvCacheDesc> cache_desc(const Problem& p) {
  auto x = dims_of(p);
  if (!x) return x.status();
  auto cp = Problem::parse(std::string("kv_cache:") + dtype_name(p.dtype) + ":" + x->cache);
  if (!cp) return cp.status();
  return ops::kv_cache_desc(*cp);
}

Result<BlockGraph> build_gemma2_decode(const Problem& p) {
  auto dm = dims_of(p);
  if (!dm) return dm.status();
  auto desc = cache_desc(p);
  if (!desc) return desc.status();
  const int64_t b = dm->b, e = dm->e, kv = dm->kv, d = dm->d, c = desc->capacity;
  BlockBuilder g(p);
  g.input("x", {b, 1, e});
  g.input("pos", {b}, DType::i32, BlockInit::positions);
  g.state("k_cache", {b, kv, c, d}, "self_attn.k.rotated");
  g.state("v_cache", {b, kv, c, d}, "self_attn.v_proj.out");
  // x is read by input_layernorm and residual_1 (its layout, when the problem gives one, is theirs).
  gemma2::add_decode_layer(g, "", *dm, "x", "pos", "y", g.layout_of("x", "x"), g.layout_of("x", "b"));
  g.output("y");
  return g.finish();
}

BlockDef gemma2_decode() {
  BlockDef def;
  def.name = "gemma2_decode";
  def.torch = "transformers Gemma2DecoderLayer(config, 0)(x, position_embeddings=rotary(x, pos), cache=DynamicCache, "
              "attention_mask=[window]): one token per sequence, eager attention";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "kv", "head_dim", "ffn", "ctx", "window", "qscale", "softcap", "eps", "theta", "steps", "lens"};
  // Global and local layers; a window shorter than the held positions (ragged: one sequence
  // inside it, one past it, one with an empty cache); H x D != E; qscale other than D; no
  // softcap; x with padded rows.
  def.check_problems = {"2x1x32:ctx=12,ffn=72,head_dim=32,heads=2,kv=1",
                        "3x1x64:ctx=40,ffn=176,head_dim=16,heads=4,kv=2,window=16",
                        "2x1x96:ctx=20,ffn=260,head_dim=32,heads=3,kv=1,lens=full,qscale=32,softcap=20,steps=4,window=7",
                        "1x1x48:ctx=9,ffn=100,head_dim=16,heads=2,kv=2,softcap=0,theta=500000",
                        "2x1x64:ctx=12,ffn=176,head_dim=16,heads=4,kv=2,window=4,x.layout=padded"};
  // A Gemma-2-2B layer (hidden 2304, 8/4 heads of 256, FFN 9216) at one decode step with a 4k
  // cache, global and local (window 4096: the whole cache), for 1 and 4 sequences (bf16).
  def.bench_problems = {
      {"1x1x2304:ctx=4096,ffn=9216,head_dim=256,heads=8,kv=4,lens=full,qscale=256,steps=1", {DType::bf16}},
      {"4x1x2304:ctx=4096,ffn=9216,head_dim=256,heads=8,kv=4,lens=full,qscale=256,steps=1", {DType::bf16}},
      {"4x1x2304:ctx=4096,ffn=9216,head_dim=256,heads=8,kv=4,lens=full,qscale=256,steps=1,window=4096", {DType::bf16}}};
  def.build = build_gemma2_decode;
  set_decode_steps(def, cache_desc, build_gemma2_decode);
  return def;
}

DNNB_REGISTER(register_block(gemma2_decode()));

}  // namespace
}  // namespace dnnb
