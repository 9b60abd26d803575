// mlstm_layer: transformers' xLSTMBlock (models/xlstm/modeling_xlstm.py, its native path: the
// one taken without the `xlstm` package, config weight_mode="single", use_bias=False,
// mode="inference"), docs/blocks.md "mlstm_layer":
//   h = x + out_proj(sigmoid(ogate_preact(n)) * multihead_norm(mLSTM(q(n), k(n), v(n),
//           cap tanh(igate_preact(n) / cap), cap tanh(fgate_preact(n) / cap)))), n = norm_mlstm(x);
//   y = h + proj_down(silu(proj_up_gate(m)) * proj_up(m)), m = norm_ffn(h).
// The norms are xLSTMRMSNorm (Llama's: normalised in f32, rounded, times w), the multi-head
// norm a layernorm over each head's DV features in f32 without affine terms, rounded, then
// times its weight [NH DV]. The gate pre-activations are soft-capped in the dtype as the module
// does, then cast to f32, the mlstm ops' gate dtype. The cell is mlstm_chunkwise from the zero
// state at chunk 64 (config.chunk_size): the module's inference path runs the native chunkwise
// kernel over the whole chunks and the recurrent step over the tail, the same states and h in
// exact arithmetic (docs/ops-family5.md). Three constant inputs stand where the module has
// Python constants or no affine terms: gate_soft_cap [1] (cap), multihead_norm.ones and
// multihead_norm.zeros [DV] (the layernorm op's w and b); every draw sets them to their values.
// Problem "BxSxE:heads=H,ffn=F[,qk=QK (default E/2)][,v=V (default E)][,cap=15 (0: none)]
// [,eps=1e-6 (norm_eps)][,chunk=64][,x.layout=padded]"; QK and V are the q/k and v widths over
// all heads.
#include <cmath>
#include <string>

#include "suites/blocks/block_spec.h"
#include "suites/blocks/graph_text.h"

namespace dnnb {
namespace {

struct Config {
  int64_t heads, qk, v, ffn, chunk;
  double cap;
};

Result<Config> parse(const Problem& p) {
  const int64_t e = p.shape.at(2);
  Config c{};
  auto heads = p.get_int("heads", 0);
  if (!heads) return heads.status();
  auto qk = p.get_int("qk", e / 2);
  if (!qk) return qk.status();
  auto v = p.get_int("v", e);
  if (!v) return v.status();
  auto ffn = p.get_int("ffn", 0);
  if (!ffn) return ffn.status();
  auto chunk = p.get_int("chunk", 64);
  if (!chunk) return chunk.status();
  auto cap = p.get_double("cap", 15.0);
  if (!cap) return cap.status();
  c = {*heads, *qk, *v, *ffn, *chunk, *cap};
  if (c.heads < 1) return Status::bad_input(p.op + ": heads=" + std::to_string(c.heads) + " must be at least 1");
  if (c.qk < c.heads || c.qk % c.heads != 0)
    return Status::bad_input(p.op + ": qk=" + std::to_string(c.qk) + " is no positive multiple of heads=" + std::to_string(c.heads));
  if (c.v < c.heads || c.v % c.heads != 0)
    return Status::bad_input(p.op + ": v=" + std::to_string(c.v) + " is no positive multiple of heads=" + std::to_string(c.heads));
  if (c.ffn < 1) return Status::bad_input(p.op + ": ffn=" + std::to_string(c.ffn) + ": the feed-forward width must be given (ffn=F >= 1)");
  if (c.chunk < 1) return Status::bad_input(p.op + ": chunk=" + std::to_string(c.chunk) + " must be at least 1");
  if (!(c.cap >= 0)) return Status::bad_input(p.op + ": cap=" + p.get("cap") + " (gate_soft_cap) must be 0 (none) or positive");
  return c;
}

// One gate: its pre-activation projection (with bias), the soft cap cap tanh(x / cap) in the
// dtype, [B, S, NH] -> [B, NH, S], then f32. Returns the gate's value name.
std::string gate(BlockBuilder& g, const std::string& which, int64_t b, int64_t s, int64_t e, const Config& c) {
  const int64_t m = b * s, nh = c.heads;
  const std::string proj = "mlstm_layer." + which + "gate_preact", pre = "mlstm_layer." + which;
  g.node(proj, "linear", shape_text({m, nh, e}) + ":bias=1", {"n1", proj + ".weight", proj + ".bias"}, {pre + ".preact"});
  std::string capped = pre + ".preact";
  if (c.cap > 0) {
    const std::string rows = shape_text({m, nh}) + ":b=1";
    g.node(pre + ".soft_cap.div", "div", rows, {capped, "gate_soft_cap"}, {pre + ".scaled"});
    g.node(pre + ".soft_cap.tanh", "tanh", shape_text({m, nh}), {pre + ".scaled"}, {pre + ".tanh"});
    g.node(pre + ".soft_cap.mul", "mul", rows, {pre + ".tanh", "gate_soft_cap"}, {pre + ".capped"});
    capped = pre + ".capped";
  }
  g.reshape(pre + ".bsh", capped, {b, s, nh});
  const bool f32 = g.dtype() == DType::f32;
  const std::string heads = pre + (f32 ? ".gate" : ".heads");
  g.node(pre + ".to_heads", "permute", shape_text({b, s, nh}) + ":perm=021", {pre + ".bsh"}, {heads});
  if (f32) return heads;
  g.node(pre + ".to_f32", "cast", shape_text({b, nh, s}) + ":y.dt=f32", {heads}, {pre + ".gate"});
  return pre + ".gate";
}

Result<BlockGraph> build_mlstm_layer(const Problem& p) {
  auto config = parse(p);
  if (!config) return config.status();
  const Config& c = *config;
  const int64_t b = p.shape.at(0), s = p.shape.at(1), e = p.shape.at(2), m = b * s;
  const int64_t nh = c.heads, dqk = c.qk / nh, dv = c.v / nh, f = c.ffn;
  const std::string eps = ":eps=" + p.get("eps", "1e-6");

  BlockBuilder g(p);
  g.input("x", {b, s, e});
  if (c.cap > 0) g.input("gate_soft_cap", {1}, p.dtype, BlockInit::normal);
  g.input("multihead_norm.ones", {dv}, p.dtype, BlockInit::normal);
  g.input("multihead_norm.zeros", {dv}, p.dtype, BlockInit::normal);
  // xLSTMBlock's state_dict order.
  g.weight("norm_mlstm.weight", {e}, BlockInit::scale);
  g.weight("mlstm_layer.q.weight", {c.qk, e}, BlockInit::matrix, e);
  g.weight("mlstm_layer.k.weight", {c.qk, e}, BlockInit::matrix, e);
  g.weight("mlstm_layer.v.weight", {c.v, e}, BlockInit::matrix, e);
  g.weight("mlstm_layer.ogate_preact.weight", {c.v, e}, BlockInit::matrix, e);
  g.weight("mlstm_layer.igate_preact.weight", {nh, e}, BlockInit::matrix, e);
  g.weight("mlstm_layer.igate_preact.bias", {nh}, BlockInit::shift);
  g.weight("mlstm_layer.fgate_preact.weight", {nh, e}, BlockInit::matrix, e);
  g.weight("mlstm_layer.fgate_preact.bias", {nh}, BlockInit::shift);
  g.weight("mlstm_layer.multihead_norm.weight", {c.v}, BlockInit::scale);
  g.weight("mlstm_layer.out_proj.weight", {e, c.v}, BlockInit::matrix, c.v);
  g.weight("norm_ffn.weight", {e}, BlockInit::scale);
  g.weight("ffn.proj_up_gate.weight", {f, e}, BlockInit::matrix, e);
  g.weight("ffn.proj_up.weight", {f, e}, BlockInit::matrix, e);
  g.weight("ffn.proj_down.weight", {e, f}, BlockInit::matrix, f);

  // x is read by norm_mlstm and residual_1 as [B, S, E] (its layout, when the problem gives one, is theirs).
  g.node("norm_mlstm", "rmsnorm", shape_text({b, s, e}) + eps + with(g.layout_of("x", "x"), ","), {"x", "norm_mlstm.weight"},
         {"n1.bse"});
  g.reshape("n1", "n1.bse", {m, e});
  for (const auto& [name, d] : {std::pair<std::string, int64_t>{"q", dqk}, {"k", dqk}, {"v", dv}}) {
    const std::string proj = "mlstm_layer." + name;
    g.node(proj, "linear", shape_text({m, nh * d, e}), {"n1", proj + ".weight"}, {proj + ".out"});
    g.reshape(proj + ".bshd", proj + ".out", {b, s, nh, d});
    g.node(proj + ".heads", "permute", shape_text({b, s, nh, d}) + ":perm=0213", {proj + ".bshd"}, {proj + ".bhsd"});
  }
  g.node("mlstm_layer.ogate_preact", "linear", shape_text({m, c.v, e}), {"n1", "mlstm_layer.ogate_preact.weight"},
         {"mlstm_layer.o.preact"});
  const std::string i = gate(g, "i", b, s, e, c), fg = gate(g, "f", b, s, e, c);
  // h, and the last states (C, n, m), which the block does not return.
  g.node("mlstm_layer.mlstm_backend", "mlstm_chunkwise",
         shape_text({b, nh, s, dqk}) + ":chunk=" + std::to_string(c.chunk) + ",dv=" + std::to_string(dv),
         {"mlstm_layer.q.bhsd", "mlstm_layer.k.bhsd", "mlstm_layer.v.bhsd", i, fg}, {"mlstm_layer.h", "", "", ""});
  g.node("mlstm_layer.h.merge_heads", "permute", shape_text({b, nh, s, dv}) + ":perm=0213", {"mlstm_layer.h"},
         {"mlstm_layer.h.bshd"});
  g.reshape("mlstm_layer.h.rows", "mlstm_layer.h.bshd", {m * nh, dv});
  g.node("mlstm_layer.multihead_norm", "layernorm", shape_text({m * nh, dv}) + eps,
         {"mlstm_layer.h.rows", "multihead_norm.ones", "multihead_norm.zeros"}, {"mlstm_layer.h.normalized"});
  g.reshape("mlstm_layer.h.normalized.rows", "mlstm_layer.h.normalized", {m, c.v});
  g.node("mlstm_layer.multihead_norm.scale", "mul", shape_text({m, c.v}) + ":b=" + std::to_string(c.v),
         {"mlstm_layer.h.normalized.rows", "mlstm_layer.multihead_norm.weight"}, {"mlstm_layer.h_norm"});
  g.node("mlstm_layer.ogate_act_fn", "sigmoid", shape_text({m, c.v}), {"mlstm_layer.o.preact"}, {"mlstm_layer.o"});
  g.node("mlstm_layer.ogate", "mul", shape_text({m, c.v}), {"mlstm_layer.o", "mlstm_layer.h_norm"}, {"mlstm_layer.h_out"});
  g.node("mlstm_layer.out_proj", "linear", shape_text({m, e, c.v}), {"mlstm_layer.h_out", "mlstm_layer.out_proj.weight"},
         {"mlstm_layer.out"});
  g.reshape("mlstm_layer.out.bse", "mlstm_layer.out", {b, s, e});
  g.node("residual_1", "add", shape_text({b, s, e}) + with(g.layout_of("x", "b"), ":"), {"mlstm_layer.out.bse", "x"}, {"h.bse"});
  g.reshape("h", "h.bse", {m, e});
  g.node("norm_ffn", "rmsnorm", shape_text({m, e}) + eps, {"h", "norm_ffn.weight"}, {"n2"});
  g.node("ffn.proj_up_gate", "linear", shape_text({m, f, e}), {"n2", "ffn.proj_up_gate.weight"}, {"ffn.gate"});
  g.node("ffn.proj_up", "linear", shape_text({m, f, e}), {"n2", "ffn.proj_up.weight"}, {"ffn.up"});
  g.node("ffn.act_fn", "swiglu", shape_text({m, f}), {"ffn.gate", "ffn.up"}, {"ffn.act"});
  g.node("ffn.proj_down", "linear", shape_text({m, e, f}), {"ffn.act", "ffn.proj_down.weight"}, {"ffn.out"});
  g.reshape("ffn.out.bse", "ffn.out", {b, s, e});
  g.node("residual_2", "add", shape_text({b, s, e}), {"h.bse", "ffn.out.bse"}, {"y"});
  g.output("y");
  return g.finish();
}

// The constant inputs' values, after the random draws (fixtures hold them as the generator
// wrote them).
Status set_constants(const Problem& p, int step, std::vector<Tensor>& inputs, Rng&) {
  if (step != 0) return Status::ok();
  auto graph = build_mlstm_layer(p);
  if (!graph) return graph.status();
  auto config = parse(p);
  if (!config) return config.status();
  for (size_t k = 0; k < graph->inputs.size(); ++k) {
    const std::string& name = graph->inputs[k].name;
    double value;
    if (name == "gate_soft_cap") value = config->cap;
    else if (name == "multihead_norm.ones") value = 1;
    else if (name == "multihead_norm.zeros") value = 0;
    else continue;
    for (int64_t e = 0; e < inputs[k].numel(); ++e) store_element(inputs[k].host_data(), inputs[k].dtype, e, value);
  }
  return Status::ok();
}

BlockDef mlstm_layer() {
  BlockDef def;
  def.name = "mlstm_layer";
  def.torch = "transformers xLSTMBlock(config)(x)[0] (native path, weight_mode=single, mode=inference)";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "qk", "v", "ffn", "cap", "eps", "chunk"};
  // Lengths below, at and across the chunk (tails of 1 to 63 tokens), DQK != DV (xLSTM's
  // qk_dim_factor 0.5), one head and several, no soft cap, a chunk other than 64, x with padded
  // rows.
  def.check_problems = {"1x7x64:ffn=192,heads=2",
                        "2x70x64:ffn=192,heads=4",
                        "1x129x96:ffn=256,heads=2",  // bf16: an ill-conditioned head row (docs/blocks.md)
                        "2x33x64:ffn=128,heads=1,qk=64,v=128",
                        "1x100x64:cap=0,chunk=16,ffn=192,heads=4",
                        "2x9x64:ffn=192,heads=2,x.layout=padded"};
  // xLSTM-7B's layer (hidden 4096, 8 heads, qk 2048 -> DQK 256, v 4096 -> DV 512, FFN
  // round_up(4096 x 2.667, 64) = 10944), prefill of 2048 and 4096 tokens.
  def.bench_problems = {{"1x2048x4096:ffn=10944,heads=8", {DType::bf16}},
                        {"1x4096x4096:ffn=10944,heads=8", {DType::bf16}},
                        {"2x4096x4096:ffn=10944,heads=8", {DType::bf16}}};
  def.build = build_mlstm_layer;
  def.step_inputs = set_constants;
  return def;
}

DNNB_REGISTER(register_block(mlstm_layer()));

}  // namespace
}  // namespace dnnb
