#include "suites/ops/mlstm_desc.h"

#include <cmath>

#include "suites/ops/op_common.h"

namespace dnnb::ops {
namespace {

Result<int64_t> positive(const Problem& p, const std::string& key, int64_t fallback) {
  auto v = p.get_int(key, fallback);
  if (!v) return Status::bad_input(p.op + ": " + v.status().message);
  if (*v < 1) return Status::bad_input(p.op + ": parameter " + key + "=" + p.get(key) + " is not positive");
  return *v;
}

}  // namespace

double MlstmDesc::scale() const { return 1.0 / std::sqrt(static_cast<double>(dqk)); }

const std::vector<std::string>& mlstm_param_keys() {
  static const std::vector<std::string> keys = {"dv", "chunk", "gates"};
  return keys;
}

Result<MlstmDesc> mlstm_desc(const Problem& p) {
  DNNB_TRY(expect_shape(p, 4, "BxNHxSxDQK (batch, heads, sequence length, q/k head dim)"));
  MlstmDesc d;
  d.batch = p.shape[0];
  d.heads = p.shape[1];
  d.s = p.shape[2];
  d.dqk = p.shape[3];
  auto dv = positive(p, "dv", d.dqk);
  auto chunk = positive(p, "chunk", 64);
  if (!dv) return dv.status();
  if (!chunk) return chunk.status();
  d.dv = *dv;
  d.chunk = *chunk;
  d.gates = p.get("gates", "normal");
  if (d.gates != "normal" && d.gates != "neg_i" && d.gates != "f_low" && d.gates != "f_high" && d.gates != "mixed")
    return Status::bad_input(p.op + ": parameter gates=" + d.gates + " is not one of normal, neg_i, f_low, f_high, mixed");
  return d;
}

Shape mlstm_qk_shape(const MlstmDesc& d) { return {d.batch, d.heads, d.s, d.dqk}; }
Shape mlstm_v_shape(const MlstmDesc& d) { return {d.batch, d.heads, d.s, d.dv}; }
Shape mlstm_gate_shape(const MlstmDesc& d) { return {d.batch, d.heads, d.s}; }
Shape mlstm_c_state_shape(const MlstmDesc& d) { return {d.batch, d.heads, d.dqk, d.dv}; }
Shape mlstm_n_state_shape(const MlstmDesc& d) { return {d.batch, d.heads, d.dqk}; }
Shape mlstm_m_state_shape(const MlstmDesc& d) { return {d.batch, d.heads}; }

}  // namespace dnnb::ops
