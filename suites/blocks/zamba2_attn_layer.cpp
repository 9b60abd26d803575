// zamba2_attn_layer: transformers' Zamba2AttentionDecoderLayer (docs/blocks.md), Zamba 2's shared
// attention block: c = concat(x, emb) on the last dim (the previous Mamba layer's output and the
// original word embeddings, [B, S, 2E]), n = input_layernorm(c) (RMSNorm over 2E); attention of
// H heads of D = 2E / H over n with scores scaled by (D / 2)^-0.5 (not D^-0.5), causal, GQA over
// kv heads; a = o_proj(...) [B, S, E]; y = feed_forward(pre_ff_layernorm(a)) (Zamba2MLP, the
// nodes of zamba2_mlp). The layer has no residual (the hybrid layer around it adds its own).
// Options as the config's: adapter=1 (use_shared_attention_adapter: q, k and v each add a
// low-rank B(A(n)) of rank R), rope=1 (use_mem_rope: q and k rotated at pos, HF's half form;
// the block then takes pos [B, S]). The adapter lists have one entry per hybrid layer; the block
// is the layer of a model with one, entry 0. Zamba2RMSNorm is Llama's (rmsnorm form=torch).
// Problem "BxSxE:heads=H,ffn=F[,kv=KV][,rank=R (default 128)][,adapter=1][,rope=1][,theta=10000]
// [,eps=1e-5]"; inputs x, emb [B, S, E] (and pos), the weights by their state_dict names.
#include <cmath>
#include <string>

#include "suites/blocks/attention_nodes.h"
#include "suites/blocks/block_spec.h"
#include "suites/blocks/graph_text.h"
#include "suites/blocks/zamba2_mlp.h"

namespace dnnb {
namespace {

Result<bool> flag(const Problem& p, const std::string& key) {
  const std::string v = p.get(key, "0");
  if (v != "0" && v != "1") return Status::bad_input(p.op + ": " + key + "=" + v + " must be 0 or 1");
  return v == "1";
}

Result<BlockGraph> build_zamba2_attn_layer(const Problem& p) {
  const int64_t b = p.shape.at(0), s = p.shape.at(1), e = p.shape.at(2), m = b * s;
  auto widths = parse_heads_kv_ffn(p);
  if (!widths) return widths.status();
  auto rank = p.get_int("rank", 128);
  if (!rank) return rank.status();
  auto adapter = flag(p, "adapter");
  if (!adapter) return adapter.status();
  auto rope = flag(p, "rope");
  if (!rope) return rope.status();
  const int64_t h = widths->h, kv = widths->kv, f = widths->f, r = *rank, a = 2 * e;
  if (h < 1 || a % h != 0) return Status::bad_input(p.op + ": heads=" + std::to_string(h) + " does not divide 2E=" + std::to_string(a));
  DNNB_TRY(check_kv_ffn(p, *widths));
  if (r < 1) return Status::bad_input(p.op + ": rank=" + std::to_string(r) + ": the adapter rank must be at least 1");
  const int64_t d = a / h;
  const std::string eps = ":eps=" + p.get("eps", "1e-5");
  const std::string theta = ":theta=" + p.get("theta", "10000");

  BlockBuilder g(p);
  g.input("x", {b, s, e});
  g.input("emb", {b, s, e});
  if (*rope) g.input("pos", {b, s}, DType::i64, BlockInit::positions);
  g.weight("self_attn.q_proj.weight", {h * d, a}, BlockInit::matrix, a);
  g.weight("self_attn.k_proj.weight", {kv * d, a}, BlockInit::matrix, a);
  g.weight("self_attn.v_proj.weight", {kv * d, a}, BlockInit::matrix, a);
  g.weight("self_attn.o_proj.weight", {e, h * d}, BlockInit::matrix, h * d);
  // Zamba2Attention's adapters map 2E to 2E, which is the q width only when kv = heads.
  if (*adapter) {
    if (kv != h) return Status::bad_input(p.op + ": adapter=1 needs kv=heads (the k and v adapters are 2E wide)");
    for (const char* name : {"q", "k", "v"}) {
      const std::string list = std::string("self_attn.linear_") + name + "_adapter_list.0";
      g.weight(list + ".0.weight", {r, a}, BlockInit::matrix, a);
      g.weight(list + ".1.weight", {a, r}, BlockInit::matrix, r);
    }
  }
  zamba2_mlp_weights(g, "feed_forward.", e, f, r);
  g.weight("input_layernorm.weight", {a}, BlockInit::scale);
  g.weight("pre_ff_layernorm.weight", {e}, BlockInit::scale);

  // x is read by the concat as [B, S, E] (its layout, when the problem gives one, is the concat's a).
  g.node("concat", "concat", shape_text({b, s, e}) + ":dim=2" + with(g.layout_of("x", "a"), ","), {"x", "emb"}, {"c"});
  g.node("input_layernorm", "rmsnorm", shape_text({b, s, a}) + eps, {"c", "input_layernorm.weight"}, {"n1.bsa"});
  g.reshape("n1", "n1.bsa", {m, a});
  // The adapters add a low-rank B(A(n1)) to each projection's rows.
  const auto add_adapter = [&](const std::string& name, const std::string& rows) {
    const std::string list = "self_attn.linear_" + name + "_adapter_list.0", adapted = "self_attn." + name + "_proj.adapted";
    g.node(list + ".0", "linear", shape_text({m, r, a}), {"n1", list + ".0.weight"}, {list + ".low"});
    g.node(list + ".1", "linear", shape_text({m, a, r}), {list + ".low", list + ".1.weight"}, {list + ".out"});
    g.node("self_attn." + name + "_adapter_add", "add", shape_text({m, a}), {rows, list + ".out"}, {adapted});
    return adapted;
  };
  add_qkv_heads(g, b, s, a, h, kv, d, "n1", "pos", *rope ? theta : "",
                *adapter ? std::function<std::string(const std::string&, const std::string&)>(add_adapter) : nullptr);
  const std::string q = *rope ? "self_attn.q.rotated" : "self_attn.q", k = *rope ? "self_attn.k.rotated" : "self_attn.k";
  g.node("self_attn.sdpa", "sdpa",
         shape_text({b, h, s, d}) + ":causal=1,kv=" + std::to_string(kv) + ",scale=" + number_text(1.0 / std::sqrt(d / 2.0)),
         {q, k, "self_attn.v"}, {"self_attn.o", ""});
  add_attention_output(g, b, s, e, h, d);
  g.node("pre_ff_layernorm", "rmsnorm", shape_text({m, e}) + eps, {"self_attn.out", "pre_ff_layernorm.weight"}, {"n2"});
  zamba2_mlp_nodes(g, "feed_forward.", "n2", "feed_forward.out", m, e, f, r);
  // A block's output is a node's own (core/block.h), and linear writes [M, E]: an identity
  // permute gives y its [B, S, E] (one copy of y, which torch's view does not make).
  g.reshape("feed_forward.out.bse", "feed_forward.out", {b, s, e});
  g.node("output", "permute", shape_text({b, s, e}) + ":perm=012", {"feed_forward.out.bse"}, {"y"});
  g.output("y");
  return g.finish();
}

BlockDef zamba2_attn_layer() {
  BlockDef def;
  def.name = "zamba2_attn_layer";
  def.torch = "transformers Zamba2AttentionDecoderLayer(config, block_id=0)(x, emb, layer_idx=0, attention_mask=causal)";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "kv", "ffn", "rank", "adapter", "rope", "theta", "eps"};
  // Zamba2-2.7B's form (no attention adapters, no rope) and Zamba2-1.2B's (both); GQA; odd
  // lengths and widths; x with padded rows.
  def.check_problems = {"1x7x32:ffn=64,heads=4,rank=8", "2x17x48:ffn=120,heads=4,kv=2,rank=8",
                        "1x19x32:adapter=1,ffn=80,heads=4,rank=6,rope=1", "2x9x32:ffn=64,heads=2,rank=4,x.layout=padded"};
  // Zamba2-2.7B's shared attention block (hidden 2560, 32 heads of 160 over the 5120 concat,
  // FFN 10240, adapter rank 128), prefill of 4 x 2048 and of 1 x 2048 tokens.
  def.bench_problems = {{"4x2048x2560:ffn=10240,heads=32,rank=128", {DType::bf16}},
                        {"1x2048x2560:ffn=10240,heads=32,rank=128", {DType::bf16}}};
  def.build = build_zamba2_attn_layer;
  return def;
}

DNNB_REGISTER(register_block(zamba2_attn_layer()));

}  // namespace
}  // namespace dnnb
