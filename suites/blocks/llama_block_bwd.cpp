// llama_block_bwd: the training step of transformers' LlamaDecoderLayer (docs/blocks.md, "The
// training step"): for x and the upstream gradient dy of y, the input gradient dx and the
// gradient of every weight, as torch autograd gives them (x.grad and each parameter's .grad).
// The graph is llama_block's forward, keeping what the backward reads (each rmsnorm's rstd,
// sdpa's o and lse), then the backward nodes in reverse order:
//   mlp.down_proj linear_bwd -> d act            mlp.act swiglu_bwd -> d gate, d up
//   mlp.{up,gate}_proj linear_bwd, their d n2 added   post_attention_layernorm rmsnorm_bwd
//   residual_2 add: d h = dy + the norm path     self_attn.o_proj linear_bwd -> d o
//   self_attn.sdpa sdpa_bwd -> dq, dk, dv (dk, dv summed over each kv head's query heads)
//   self_attn.{q,k}_rope rope_bwd; the heads' permutes back; self_attn.{q,k,v}_proj linear_bwd,
//   their three d n1 added; input_layernorm rmsnorm_bwd; residual_1 add: dx = d h + the norm path.
// y itself is not computed (no node reads it).
// Problem "BxSxE:heads=H,kv=KV,ffn=F[,eps=1e-6][,theta=10000]"; inputs x, pos, the 9 weights,
// dy [B, S, E]; outputs dx and "<weight>.grad" for each weight in state_dict order.
#include "suites/blocks/block_spec.h"
#include "suites/blocks/llama_block.h"

namespace dnnb {
namespace {

Result<BlockGraph> build_llama_block_bwd(const Problem& p) {
  auto dims = llama::dims_of(p);
  if (!dims) return dims.status();
  const int64_t b = dims->b, s = dims->s, e = dims->e, h = dims->h, kv = dims->kv, f = dims->f, d = dims->d, m = dims->m;
  BlockBuilder g(p);
  llama::declare_forward(g, *dims, true);
  g.input("dy", {b, s, e});
  g.reshape("dy.rows", "dy", {m, e});

  g.node("mlp.down_proj.bwd", "linear_bwd", shape_text({m, e, f}), {"mlp.act.out", "mlp.down_proj.weight", "dy.rows"},
         {"d.mlp.act.out", "mlp.down_proj.weight.grad"});
  g.node("mlp.act.bwd", "swiglu_bwd", shape_text({m, f}), {"mlp.gate", "mlp.up", "d.mlp.act.out"}, {"d.mlp.gate", "d.mlp.up"});
  g.node("mlp.gate_proj.bwd", "linear_bwd", shape_text({m, f, e}), {"n2", "mlp.gate_proj.weight", "d.mlp.gate"},
         {"d.n2.gate", "mlp.gate_proj.weight.grad"});
  g.node("mlp.up_proj.bwd", "linear_bwd", shape_text({m, f, e}), {"n2", "mlp.up_proj.weight", "d.mlp.up"},
         {"d.n2.up", "mlp.up_proj.weight.grad"});
  g.node("n2.grad_sum", "add", shape_text({m, e}), {"d.n2.gate", "d.n2.up"}, {"d.n2"});
  g.node("post_attention_layernorm.bwd", "rmsnorm_bwd", shape_text({m, e}) + dims->eps,
         {"h", "post_attention_layernorm.weight", "d.n2", "post_attention_layernorm.rstd"},
         {"d.h.norm", "post_attention_layernorm.weight.grad"});
  g.node("residual_2.bwd", "add", shape_text({m, e}), {"d.h.norm", "dy.rows"}, {"d.h"});

  g.node("self_attn.o_proj.bwd", "linear_bwd", shape_text({m, e, h * d}), {"self_attn.o.rows", "self_attn.o_proj.weight", "d.h"},
         {"d.self_attn.o.rows", "self_attn.o_proj.weight.grad"});
  g.reshape("d.self_attn.o.bshd", "d.self_attn.o.rows", {b, s, h, d});
  g.node("self_attn.merge_heads.bwd", "permute", shape_text({b, s, h, d}) + ":perm=0213", {"d.self_attn.o.bshd"},
         {"d.self_attn.o"});
  g.node("self_attn.sdpa.bwd", "sdpa_bwd", shape_text({b, h, s, d}) + ":causal=1,kv=" + std::to_string(kv),
         {"self_attn.q.rotated", "self_attn.k.rotated", "self_attn.v", "self_attn.o", "d.self_attn.o", "self_attn.lse"},
         {"d.self_attn.q.rotated", "d.self_attn.k.rotated", "d.self_attn.v"});
  std::string previous;  // the sum of d n1 over the projections so far
  for (const auto& [name, nh] : {std::pair<std::string, int64_t>{"q", h}, {"k", kv}, {"v", kv}}) {
    const std::string proj = "self_attn." + name + "_proj";
    std::string grad = "d.self_attn." + name;
    if (name != "v") {
      g.node("self_attn." + name + "_rope.bwd", "rope_bwd", shape_text({b, nh, s, d}) + dims->theta, {grad + ".rotated", "pos"},
             {grad});
    }
    g.node("self_attn." + name + "_heads.bwd", "permute", shape_text({b, nh, s, d}) + ":perm=0213", {grad}, {grad + ".bshd"});
    g.reshape(grad + ".rows", grad + ".bshd", {m, nh * d});
    g.node(proj + ".bwd", "linear_bwd", shape_text({m, nh * d, e}), {"n1", proj + ".weight", grad + ".rows"},
           {"d.n1." + name, proj + ".weight.grad"});
    if (previous.empty()) {
      previous = "d.n1." + name;
    } else {
      const std::string sum = name == "v" ? "d.n1" : "d.n1.q" + name;
      g.node("n1.grad_sum." + name, "add", shape_text({m, e}), {previous, "d.n1." + name}, {sum});
      previous = sum;
    }
  }
  g.reshape("d.n1.bse", "d.n1", {b, s, e});
  g.node("input_layernorm.bwd", "rmsnorm_bwd", shape_text({b, s, e}) + dims->eps + with(g.layout_of("x", "x"), ","),
         {"x", "input_layernorm.weight", "d.n1.bse", "input_layernorm.rstd"}, {"d.x.norm", "input_layernorm.weight.grad"});
  g.reshape("d.h.bse", "d.h", {b, s, e});
  g.node("residual_1.bwd", "add", shape_text({b, s, e}), {"d.x.norm", "d.h.bse"}, {"dx"});

  g.output("dx");
  for (const char* w : {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                        "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                        "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"})
    g.output(std::string(w) + ".grad");
  return g.finish();
}

BlockDef llama_block_bwd() {
  BlockDef def;
  def.name = "llama_block_bwd";
  def.torch = "torch.autograd.grad(LlamaDecoderLayer(config, 0)(x, position_embeddings=rotary(x, pos)), (x, *parameters), dy)";
  def.dtypes = {DType::f32, DType::f16, DType::bf16};
  def.param_keys = {"heads", "kv", "ffn", "eps", "theta"};
  // llama_block's: GQA and MQA, odd lengths, FFN widths that are no tile's multiple; x with padded rows;
  // and Llama's head dim 128, where sdpa_bwd takes the GPUs' 16-bit tensor-core kernels.
  def.check_problems = {"1x7x64:ffn=172,heads=4,kv=2", "2x17x64:ffn=176,heads=4,kv=2", "1x33x128:ffn=344,heads=4,kv=1",
                        "2x13x96:ffn=260,heads=3,kv=3,theta=500000", "2x9x64:ffn=176,heads=4,kv=2,x.layout=padded",
                        "1x21x256:ffn=344,heads=2,kv=1,theta=500000"};
  // A Llama-3-8B layer's training step at 1 x 2048 and 4 x 2048 tokens (bf16).
  def.bench_problems = {{"1x2048x4096:eps=1e-5,ffn=14336,heads=32,kv=8,theta=500000", {DType::bf16}},
                        {"4x2048x4096:eps=1e-5,ffn=14336,heads=32,kv=8,theta=500000", {DType::bf16}}};
  def.build = build_llama_block_bwd;
  return def;
}

DNNB_REGISTER(register_block(llama_block_bwd()));

}  // namespace
}  // namespace dnnb
