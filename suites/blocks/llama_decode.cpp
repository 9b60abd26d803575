// llama_decode: transformers' LlamaDecoderLayer at one new token per sequence with a KV cache
// (docs/blocks.md, "The decode step"): the layer of llama_block, where the token's k and v
// (k after rope) are stored into the caches at pos[b] and its query attends to positions
// 0..pos[b] of the cache (the `kv_cache` op), as a DynamicCache's update and SDPA over the
// concatenated keys compute it. The projections are `gemv` nodes: one token's product is bound
// by reading the weight, which gemv is written for.
// Problem "Bx1xE:heads=H,kv=KV,ffn=F,ctx=C[,steps=3][,lens=ragged|full][,eps=1e-6][,theta=10000]":
// B sequences of one token, caches of C positions (ctx), head dim E/H. steps and lens are
// kv_cache's: a check runs `steps` decode steps; sequence b writes position pos0(b) + step
// (kv_cache_desc.h: ragged spreads the sequences' lengths, full gives each C - steps), the
// caches hold values below pos0(b) and NaN from there (a read past a sequence's length shows).
// Inputs: x [B, 1, E], pos [B] i32, k_cache and v_cache [B, KV, C, D] (state, updated in place),
// the 9 weights by their state_dict names; output y [B, 1, E].
#include <cmath>

#include "suites/blocks/block_spec.h"
#include "suites/blocks/decode_step.h"
#include "suites/blocks/llama_block.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb {
namespace {

// The kv_cache node's problem, whose descriptor also gives the positions of every step.
Result<std::string> cache_problem(const Problem& p, const llama::Dims& d) {
  auto ctx = p.get_int("ctx", 0);
  if (!ctx) return ctx.status();
  if (*ctx < 1) return Status::bad_input(p.op + ": ctx=C, the cache's positions, must be given (C >= 1)");
  std::string text = shape_text({d.b, d.h, *ctx, d.d}) + ":kv=" + std::to_string(d.kv) + ",lens=" +
                     p.get("lens", "ragged") + ",steps=" + p.get("steps", "3");
  return text;
}

Result<ops::KvCacheDesc> cache_desc(const Problem& p) {
  auto d = llama::dims_of(p);
  if (!d) return d.status();
  auto text = cache_problem(p, *d);
  if (!text) return text.status();
  auto cp = Problem::parse(std::string("kv_cache:") + dtype_name(p.dtype) + ":" + *text);
  if (!cp) return cp.status();
  return ops::kv_cache_desc(*cp);
}

Result<BlockGraph> build_llama_decode(const Problem& p) {
  auto dims = llama::dims_of(p);
  if (!dims) return dims.status();
  const llama::Dims& dm = *dims;
  if (dm.s != 1)
    return Status::bad_input(p.op + ": a decode step takes one token per sequence (Bx1xE), got S=" + std::to_string(dm.s));
  auto cache = cache_problem(p, dm);
  if (!cache) return cache.status();
  auto desc = cache_desc(p);
  if (!desc) return desc.status();
  const int64_t b = dm.b, e = dm.e, h = dm.h, kv = dm.kv, f = dm.f, d = dm.d, c = desc->capacity;
  const std::string batch = ":batch=" + std::to_string(b);
  BlockBuilder g(p);
  g.input("x", {b, 1, e});
  g.input("pos", {b}, DType::i32, BlockInit::positions);
  g.state("k_cache", {b, kv, c, d}, "self_attn.k.rotated");
  g.state("v_cache", {b, kv, c, d}, "self_attn.v_proj.out");
  llama::declare_weights(g, dm);

  // x is read by input_layernorm and residual_1 (its layout, when the problem gives one, is theirs).
  g.node("input_layernorm", "rmsnorm", shape_text({b, 1, e}) + dm.eps + with(g.layout_of("x", "x"), ","),
         {"x", "input_layernorm.weight"}, {"n1.b1e"});
  g.reshape("n1", "n1.b1e", {b, e});
  // rope reads positions [B, S]: the one token's, as a view of pos.
  g.reshape("pos.bs", "pos", {b, 1});
  for (const auto& [name, nh] : {std::pair<std::string, int64_t>{"q", h}, {"k", kv}, {"v", kv}}) {
    const std::string proj = "self_attn." + name + "_proj";
    g.node(proj, "gemv", shape_text({nh * d, e}) + batch, {proj + ".weight", "n1"}, {proj + ".out"});
    // One token: [B, heads x D] is already [B, heads, 1, D] in memory (no permute).
    g.reshape("self_attn." + name, proj + ".out", {b, nh, 1, d});
    if (name != "v")
      g.node("self_attn." + name + "_rope", "rope", shape_text({b, nh, 1, d}) + dm.theta + ",pos.dt=i32",
             {"self_attn." + name, "pos.bs"}, {"self_attn." + name + ".rotated"});
  }
  g.reshape("self_attn.q.token", "self_attn.q.rotated", {b, h, d});
  g.reshape("self_attn.k.token", "self_attn.k.rotated", {b, kv, d});
  g.reshape("self_attn.v.token", "self_attn.v_proj.out", {b, kv, d});
  g.node("self_attn.kv_cache", "kv_cache", *cache,
         {"self_attn.q.token", "self_attn.k.token", "self_attn.v.token", "pos", "k_cache", "v_cache"}, {"self_attn.o"});
  g.reshape("self_attn.o.rows", "self_attn.o", {b, h * d});
  g.node("self_attn.o_proj", "gemv", shape_text({e, h * d}) + batch, {"self_attn.o_proj.weight", "self_attn.o.rows"},
         {"self_attn.out"});
  g.reshape("self_attn.out.b1e", "self_attn.out", {b, 1, e});
  g.node("residual_1", "add", shape_text({b, 1, e}) + with(g.layout_of("x", "b"), ":"), {"self_attn.out.b1e", "x"},
         {"h.b1e"});
  g.reshape("h", "h.b1e", {b, e});
  g.node("post_attention_layernorm", "rmsnorm", shape_text({b, e}) + dm.eps, {"h", "post_attention_layernorm.weight"},
         {"n2"});
  g.node("mlp.gate_proj", "gemv", shape_text({f, e}) + batch, {"mlp.gate_proj.weight", "n2"}, {"mlp.gate"});
  g.node("mlp.up_proj", "gemv", shape_text({f, e}) + batch, {"mlp.up_proj.weight", "n2"}, {"mlp.up"});
  g.node("mlp.act", "swiglu", shape_text({b, f}), {"mlp.gate", "mlp.up"}, {"mlp.act.out"});
  g.node("mlp.down_proj", "gemv", shape_text({e, f}) + batch, {"mlp.down_proj.weight", "mlp.act.out"}, {"mlp.out"});
  g.reshape("mlp.out.b1e", "mlp.out", {b, 1, e});
  g.node("residual_2", "add", shape_text({b, 1, e}), {"mlp.out.b1e", "h.b1e"}, {"y"});
  g.output("y");
  return g.finish();
}

BlockDef llama_decode() {
  BlockDef def;
  def.name = "llama_decode";
  def.torch = "transformers LlamaDecoderLayer(config, 0)(x, position_embeddings=rotary(x, pos), past_key_values=DynamicCache, "
              "use_cache=True): one token per sequence";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "kv", "ffn", "eps", "theta", "ctx", "steps", "lens"};
  // GQA, MQA and MHA; ragged and full lengths (one sequence with an empty cache); head dims 16
  // to 64; an FFN width that is no tile's multiple; x with padded rows.
  def.check_problems = {"1x1x64:ctx=24,ffn=172,heads=4,kv=2", "3x1x64:ctx=40,ffn=176,heads=4,kv=2",
                        "2x1x128:ctx=33,ffn=344,heads=2,kv=1,theta=500000",
                        "2x1x96:ctx=20,ffn=260,heads=3,kv=3,lens=full,steps=4",
                        "2x1x64:ctx=12,ffn=176,heads=4,kv=2,x.layout=padded"};
  // A Llama-3-8B layer at one decode step with a 4k cache (positions 0..4094 filled, the token
  // written at 4095), for 1 and 4 sequences (bf16).
  def.bench_problems = {
      {"1x1x4096:ctx=4096,eps=1e-5,ffn=14336,heads=32,kv=8,lens=full,steps=1,theta=500000", {DType::bf16}},
      {"4x1x4096:ctx=4096,eps=1e-5,ffn=14336,heads=32,kv=8,lens=full,steps=1,theta=500000", {DType::bf16}}};
  def.build = build_llama_decode;
  set_decode_steps(def, cache_desc, build_llama_decode);
  return def;
}

DNNB_REGISTER(register_block(llama_decode()));

}  // namespace
}  // namespace dnnb
