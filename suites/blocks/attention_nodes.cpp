#include "suites/blocks/attention_nodes.h"

#include <utility>

#include "suites/blocks/graph_text.h"

namespace dnnb {

void add_qkv_heads(BlockBuilder& g, int64_t b, int64_t s, int64_t width, int64_t h, int64_t kv, int64_t d,
                   const std::string& in, const std::string& pos, const std::string& theta,
                   const std::function<std::string(const std::string& n, const std::string& rows)>& adapt) {
  const int64_t m = b * s;
  for (const auto& [name, nh] : {std::pair<std::string, int64_t>{"q", h}, {"k", kv}, {"v", kv}}) {
    const std::string proj = "self_attn." + name + "_proj";
    std::string rows = proj + ".out";
    g.node(proj, "linear", shape_text({m, nh * d, width}), {in, proj + ".weight"}, {rows});
    if (adapt) rows = adapt(name, rows);
    g.reshape(proj + ".heads", rows, {b, s, nh, d});
    g.node("self_attn." + name + "_heads", "permute", shape_text({b, s, nh, d}) + ":perm=0213", {proj + ".heads"},
           {"self_attn." + name});
    if (!theta.empty() && name != "v")
      g.node("self_attn." + name + "_rope", "rope", shape_text({b, nh, s, d}) + theta, {"self_attn." + name, pos},
             {"self_attn." + name + ".rotated"});
  }
}

void add_attention_output(BlockBuilder& g, int64_t b, int64_t s, int64_t e, int64_t h, int64_t d) {
  const int64_t m = b * s;
  g.node("self_attn.merge_heads", "permute", shape_text({b, h, s, d}) + ":perm=0213", {"self_attn.o"}, {"self_attn.o.bshd"});
  g.reshape("self_attn.o.rows", "self_attn.o.bshd", {m, h * d});
  g.node("self_attn.o_proj", "linear", shape_text({m, e, h * d}), {"self_attn.o.rows", "self_attn.o_proj.weight"},
         {"self_attn.out"});
}

}  // namespace dnnb
