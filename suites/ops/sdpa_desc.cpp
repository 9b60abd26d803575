#include "suites/ops/sdpa_desc.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "suites/ops/op_common.h"

namespace dnnb::ops {
namespace {

Result<bool> flag(const Problem& p, const std::string& key) {
  const std::string v = p.get(key, "0");
  if (v != "0" && v != "1") return Status::bad_input(p.op + ": parameter " + key + "=" + v + " is not 0 or 1");
  return v == "1";
}

Result<int64_t> positive(const Problem& p, const std::string& key, int64_t fallback) {
  auto v = p.get_int(key, fallback);
  if (!v) return Status::bad_input(p.op + ": " + v.status().message);
  if (*v < 1) return Status::bad_input(p.op + ": parameter " + key + "=" + p.get(key) + " is not positive");
  return *v;
}

Result<double> finite_positive(const Problem& p, const std::string& key, double fallback) {
  if (!p.has(key)) return fallback;
  const std::string text = p.get(key);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0)
    return Status::bad_input(p.op + ": parameter " + key + "=" + text + " is not a positive number");
  return v;
}

}  // namespace

const std::vector<std::string>& sdpa_param_keys() {
  static const std::vector<std::string> keys = {"kv", "sk", "dv", "causal", "window", "softcap", "mask", "scale"};
  return keys;
}

Result<SdpaDesc> sdpa_desc(const Problem& p) {
  DNNB_TRY(expect_shape(p, 4, "BxHxSxD (batch, heads, query length, head dim)"));
  SdpaDesc d;
  d.batch = p.shape[0];
  d.heads = p.shape[1];
  d.sq = p.shape[2];
  d.d = p.shape[3];
  auto kv = positive(p, "kv", d.heads);
  auto sk = positive(p, "sk", d.sq);
  auto dv = positive(p, "dv", d.d);
  if (!kv) return kv.status();
  if (!sk) return sk.status();
  if (!dv) return dv.status();
  d.kv_heads = *kv;
  d.sk = *sk;
  d.dv = *dv;
  if (d.heads % d.kv_heads != 0)
    return Status::bad_input(p.op + ": kv=" + std::to_string(d.kv_heads) + " does not divide the " +
                             std::to_string(d.heads) + " query heads");
  auto causal = flag(p, "causal");
  auto mask = flag(p, "mask");
  if (!causal) return causal.status();
  if (!mask) return mask.status();
  d.causal = *causal;
  d.mask = *mask;
  if (p.has("window")) {
    auto w = positive(p, "window", 0);
    if (!w) return w.status();
    d.window = *w;
    if (!d.causal) return Status::bad_input(p.op + ": window=" + p.get("window") + " needs causal=1 (Gemma 2's sliding window is causal)");
  }
  if (d.mask && d.causal)
    return Status::bad_input(p.op + ": mask=1 with causal=1 (torch raises on CUDA): put the causal part into the mask");
  auto cap = finite_positive(p, "softcap", 0);
  if (!cap) return cap.status();
  d.softcap = *cap;
  auto scale = finite_positive(p, "scale", 1.0 / std::sqrt(static_cast<double>(d.d)));
  if (!scale) return scale.status();
  d.scale = *scale;
  return d;
}

double SdpaDesc::visible_pairs() const {
  double pairs = 0;
  for (int64_t i = 0; i < sq; ++i) {
    int64_t hi = causal ? std::min(i + 1, sk) : sk;           // keys [lo, hi)
    int64_t lo = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
    if (hi > lo) pairs += static_cast<double>(hi - lo);
  }
  return pairs;
}

double sdpa_forward_flops(const SdpaDesc& d) {
  return 2.0 * static_cast<double>(d.batch * d.heads) * d.visible_pairs() * static_cast<double>(d.d + d.dv);
}

double sdpa_backward_flops(const SdpaDesc& d) {
  return 2.0 * static_cast<double>(d.batch * d.heads) * d.visible_pairs() * static_cast<double>(3 * d.d + 2 * d.dv);
}

Shape sdpa_q_shape(const SdpaDesc& d) { return {d.batch, d.heads, d.sq, d.d}; }
Shape sdpa_k_shape(const SdpaDesc& d) { return {d.batch, d.kv_heads, d.sk, d.d}; }
Shape sdpa_v_shape(const SdpaDesc& d) { return {d.batch, d.kv_heads, d.sk, d.dv}; }
Shape sdpa_o_shape(const SdpaDesc& d) { return {d.batch, d.heads, d.sq, d.dv}; }
Shape sdpa_lse_shape(const SdpaDesc& d) { return {d.batch, d.heads, d.sq}; }
Shape sdpa_mask_shape(const SdpaDesc& d) { return {d.sq, d.sk}; }

}  // namespace dnnb::ops
