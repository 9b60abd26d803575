// gemma2_lm: transformers' Gemma2ForCausalLM run token by token through its KV caches
// (docs/blocks.md, "gemma2_lm"): a prompt of P tokens, then N decode steps, one token per
// sequence a step, every step's logits compared. A step is
//   h = embed_tokens.weight[ids] * sqrt(E) (the scale rounded to the dtype, as
//       Gemma2TextScaledWordEmbedding multiplies by embed_scale.to(dtype));
//   h = layer_i(h) for each layer: gemma2_decode's graph (gemma2_decode.h) under the prefix
//       model.layers.<i>., local (window=W, Gemma2Config's sliding_window) for even i and global
//       for odd i, as Gemma2Config's default layer_types;
//   logits = c tanh(lm_head(model.norm(h)) / c), c = final_logit_softcapping (div, tanh, mul by
//       the constant input final_softcap), lm_head tied: the embedding table read by a gemv.
// The prompt goes through the caches one token a step (a case's inputs keep one shape over its
// steps), so step s < P's logits are compared with the module's prefill logits at position s
// (the same function of the same tokens) and step P + k's with its k-th decode step's.
// Problem "Bx1xE:vocab=V,heads=H,kv=KV,head_dim=D,ffn=F,prompt=P,steps=N[,layers=2]
// [,window=4096][,qscale=D][,softcap=50][,final_softcap=30 (0: none)][,eps=1e-6][,theta=10000]
// [,ids.layout=padded][,model.embed_tokens.weight.layout=padded]".
// Inputs: ids [B] i64, pos [B] i32 (the step: every sequence at the same position), the
// constants embed_scale [1] and final_softcap [1] (dtype; set at step 0, fixtures hold them),
// model.layers.<i>.k_cache and v_cache [B, KV, P + N, D] (state), the weights by their
// state_dict names (model.embed_tokens.weight, 11 per layer, model.norm.weight); output
// logits [B, V].
#include <cmath>
#include <string>

#include "suites/blocks/block_spec.h"
#include "suites/blocks/decode_step.h"
#include "suites/blocks/gemma2_decode.h"
#include "suites/blocks/graph_text.h"

namespace dnnb {
namespace {

struct Config {
  int64_t vocab = 1, prompt = 1, steps = 1, layers = 2;
  double final_softcap = 30;
  gemma2::DecodeDims local, global;  // the layers' dims: their kv_cache problems differ by window
  int64_t total() const { return prompt + steps; }
};

Result<Config> parse(const Problem& p) {
  Config c;
  for (auto [dst, key, fallback] : {std::tuple{&c.vocab, "vocab", int64_t{0}}, {&c.prompt, "prompt", int64_t{0}},
                                    {&c.steps, "steps", int64_t{4}}, {&c.layers, "layers", int64_t{2}}}) {
    auto v = p.get_int(key, fallback);
    if (!v) return v.status();
    if (*v < 1) return Status::bad_input(p.op + ": " + key + "=" + std::to_string(*v) + " must be given and at least 1");
    *dst = *v;
  }
  auto cap = p.get_double("final_softcap", 30.0);
  if (!cap) return cap.status();
  if (!(*cap >= 0)) return Status::bad_input(p.op + ": final_softcap=" + p.get("final_softcap") + " must be 0 (none) or positive");
  c.final_softcap = *cap;
  // Every position of the caches is written by a step: lens=full with steps = C gives pos0 = 0.
  const std::string steps = std::to_string(c.total());
  auto local = gemma2::decode_dims(p, c.total(), steps, "full", p.get("window", "4096"));
  if (!local) return local.status();
  auto global = gemma2::decode_dims(p, c.total(), steps, "full", "");
  if (!global) return global.status();
  c.local = *local;
  c.global = *global;
  return c;
}

bool is_local(int64_t layer) { return layer % 2 == 0; }  // Gemma2Config's default layer_types
std::string prefix(int64_t layer) { return "model.layers." + std::to_string(layer) + "."; }

Result<BlockGraph> build_gemma2_lm(const Problem& p) {
  auto cfg = parse(p);
  if (!cfg) return cfg.status();
  const gemma2::DecodeDims& dm = cfg->global;
  const int64_t b = dm.b, e = dm.e, v = cfg->vocab, c = cfg->total();
  BlockBuilder g(p);
  g.input("ids", {b}, DType::i64, BlockInit::positions);
  g.input("pos", {b}, DType::i32, BlockInit::positions);
  g.input("embed_scale", {1}, p.dtype, BlockInit::normal);
  if (cfg->final_softcap > 0) g.input("final_softcap", {1}, p.dtype, BlockInit::normal);
  for (int64_t i = 0; i < cfg->layers; ++i) {
    g.state(prefix(i) + "k_cache", {b, dm.kv, c, dm.d}, prefix(i) + "self_attn.k.rotated");
    g.state(prefix(i) + "v_cache", {b, dm.kv, c, dm.d}, prefix(i) + "self_attn.v_proj.out");
  }
  g.weight("model.embed_tokens.weight", {v, e}, BlockInit::matrix, e);
  // ids is read by the embedding, the table by the embedding (its rows) and the tied lm_head (its
  // matrix): their layouts, when the problem gives them, are those nodes'.
  const std::string table = "model.embed_tokens.weight";
  const std::string ids_layout = g.layout_of("ids", "ids"), table_layout = g.layout_of(table, "table");
  const std::string layouts = ids_layout + (ids_layout.empty() || table_layout.empty() ? "" : ",") + table_layout;
  g.node("model.embed_tokens", "embedding", shape_text({b, v, e}) + with(layouts, ":"), {"ids", table}, {"embedded"});
  g.node("model.embed_tokens.scale", "mul", shape_text({b, e}) + ":b=1", {"embedded", "embed_scale"}, {"h0"});
  g.reshape("h0.b1e", "h0", {b, 1, e});
  std::string h = "h0.b1e";
  for (int64_t i = 0; i < cfg->layers; ++i) {
    const std::string out = prefix(i) + "out";
    gemma2::add_decode_layer(g, prefix(i), is_local(i) ? cfg->local : cfg->global, h, "pos", out, "", "");
    h = out;
  }
  g.weight("model.norm.weight", {e}, BlockInit::shift);
  g.node("model.norm", "rmsnorm", shape_text({b, 1, e}) + dm.eps, {h, "model.norm.weight"}, {"normed.b1e"});
  g.reshape("normed", "normed.b1e", {b, e});
  const std::string logits = cfg->final_softcap > 0 ? "lm_head.out" : "logits";
  g.node("lm_head", "gemv", shape_text({v, e}) + ":batch=" + std::to_string(b) + with(g.layout_of(table, "w"), ","),
         {table, "normed"}, {logits});
  if (cfg->final_softcap > 0) {
    const std::string rows = shape_text({b, v}) + ":b=1";
    g.node("final_softcap.div", "div", rows, {logits, "final_softcap"}, {"logits.scaled"});
    g.node("final_softcap.tanh", "tanh", shape_text({b, v}), {"logits.scaled"}, {"logits.tanh"});
    g.node("final_softcap.mul", "mul", rows, {"logits.tanh", "final_softcap"}, {"logits"});
  }
  g.output("logits");
  return g.finish();
}

// Every step: new token ids (uniform over the vocabulary; fixtures give theirs) and pos = step.
// Step 0: the constants, and both caches of every layer NaN (nothing held before the prompt).
Status lm_step_inputs(const Problem& p, int step, std::vector<Tensor>& inputs, Rng& rng) {
  auto cfg = parse(p);
  if (!cfg) return cfg.status();
  auto graph = build_gemma2_lm(p);
  if (!graph) return graph.status();
  auto cp = Problem::parse(std::string("kv_cache:") + dtype_name(p.dtype) + ":" + cfg->global.cache);
  if (!cp) return cp.status();
  auto desc = ops::kv_cache_desc(*cp);
  if (!desc) return desc.status();
  if (inputs.size() != graph->inputs.size())
    return Status::bad_input(p.op + ": " + std::to_string(inputs.size()) + " inputs, the graph has " +
                             std::to_string(graph->inputs.size()));
  for (size_t k = 0; k < graph->inputs.size(); ++k) {
    const BlockTensor& t = graph->inputs[k];
    Tensor& x = inputs[k];
    if (t.name == "ids") {
      for (int64_t i = 0; i < x.numel(); ++i)
        store_element(x.host_data(), x.dtype, i, std::floor(rng.uniform() * static_cast<double>(cfg->vocab)));
    } else if (t.name == "pos") {
      for (int64_t i = 0; i < x.numel(); ++i) store_element(x.host_data(), x.dtype, i, static_cast<double>(step));
    } else if (step == 0 && t.name == "embed_scale") {
      store_element(x.host_data(), x.dtype, 0, std::sqrt(static_cast<double>(cfg->global.e)));
    } else if (step == 0 && t.name == "final_softcap") {
      store_element(x.host_data(), x.dtype, 0, cfg->final_softcap);
    } else if (step == 0 && t.state) {
      DNNB_TRY(nan_outside_held(*desc, x));
    }
  }
  return Status::ok();
}

BlockDef gemma2_lm() {
  BlockDef def;
  def.name = "gemma2_lm";
  def.torch = "transformers Gemma2ForCausalLM(config)(ids, cache=DynamicCache): a prompt's prefill logits, then "
              "one token a step; run here one token a step through the caches";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"vocab", "heads", "kv", "head_dim", "ffn", "prompt", "steps", "layers", "window",
                    "qscale", "softcap", "final_softcap", "eps", "theta"};
  // Two layers (local and global) with a window shorter than the sequence; MQA and GQA; no
  // final softcap; four layers; the embedding table's rows padded (read by the embedding and
  // by the tied lm_head; docs/blocks.md).
  def.check_problems = {"2x1x32:ffn=64,head_dim=16,heads=2,kv=1,prompt=5,steps=4,vocab=96,window=4",
                        "1x1x64:ffn=128,head_dim=32,heads=4,kv=2,prompt=3,qscale=24,steps=4,vocab=50,window=3",
                        "2x1x32:ffn=64,final_softcap=0,head_dim=16,heads=2,kv=2,prompt=2,steps=4,vocab=40",
                        "1x1x32:ffn=48,head_dim=16,heads=2,kv=1,layers=4,prompt=4,steps=4,vocab=64,window=2",
                        "3x1x32:ffn=64,head_dim=16,heads=2,kv=1,model.embed_tokens.weight.layout=padded,prompt=2,steps=4,vocab=48,"
                        "window=2"};
  // Gemma-2-2B's shapes (vocab 256000, hidden 2304, 8/4 heads of 256, FFN 9216, window 4096)
  // with 2 layers, bf16: bench times step 0, the first token (a step is bound by reading the
  // weights, the 1.18 GB table twice: embedding row and lm_head); the 4k-context decode step is
  // gemma2_decode's bench.
  def.bench_problems = {
      {"1x1x2304:ffn=9216,head_dim=256,heads=8,kv=4,prompt=1,qscale=256,steps=1,vocab=256000", {DType::bf16}},
      {"4x1x2304:ffn=9216,head_dim=256,heads=8,kv=4,prompt=1,qscale=256,steps=1,vocab=256000", {DType::bf16}}};
  def.build = build_gemma2_lm;
  def.steps = [](const Problem& p) {
    auto c = parse(p);
    return c ? static_cast<int>(c->total()) : 1;
  };
  def.step_inputs = lm_step_inputs;
  return def;
}

DNNB_REGISTER(register_block(gemma2_lm()));

}  // namespace
}  // namespace dnnb
