#include "suites/ops/kv_cache_desc.h"

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "suites/ops/op_common.h"

namespace dnnb::ops {

int64_t KvCacheDesc::pos0(int64_t b) const {
  const int64_t top = capacity - steps;
  if (!ragged || batch == 1) return top;
  return top * (batch - 1 - b) / (batch - 1);
}

int64_t KvCacheDesc::step0_positions() const {
  int64_t n = 0;
  for (int64_t b = 0; b < batch; ++b) n += pos0(b) + 1 - first(pos0(b));
  return n;
}

const std::vector<std::string>& kv_cache_param_keys() {
  static const std::vector<std::string> keys = {"kv", "cache", "steps", "lens", "scale", "softcap", "window"};
  return keys;
}

const std::vector<DType>& kv_cache_dtypes() {
  static const std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16, DType::f8_e4m3fn, DType::q8_0};
  return dtypes;
}

Result<KvCacheDesc> kv_cache_desc(const Problem& p) {
  DNNB_TRY(expect_shape(p, 4, "BxHxCxD (sequences, query heads, cache capacity, head dim)"));
  KvCacheDesc d;
  d.batch = p.shape[0];
  d.heads = p.shape[1];
  d.capacity = p.shape[2];
  d.d = p.shape[3];
  d.dtype = p.dtype;
  auto kv = p.get_int("kv", d.heads);
  if (!kv) return Status::bad_input(p.op + ": " + kv.status().message);
  if (*kv < 1 || d.heads % *kv != 0)
    return Status::bad_input(p.op + ": kv=" + p.get("kv") + " does not divide the " + std::to_string(d.heads) +
                             " query heads");
  d.kv_heads = *kv;
  d.cache = p.dtype;
  if (p.has("cache")) {
    auto c = parse_dtype(p.get("cache"));
    if (!c || std::find(kv_cache_dtypes().begin(), kv_cache_dtypes().end(), *c) == kv_cache_dtypes().end())
      return Status::bad_input(p.op + ": cache=" + p.get("cache") + " is not one of f32, f16, bf16, f8_e4m3fn, q8_0");
    d.cache = *c;
  }
  if (d.cache == DType::q8_0 && d.d % 32 != 0)
    return Status::bad_input(p.op + ": cache=q8_0 needs the head dim (" + std::to_string(d.d) +
                             ") a multiple of 32, its block");
  auto steps = p.get_int("steps", 3);
  if (!steps) return Status::bad_input(p.op + ": " + steps.status().message);
  if (*steps < 1 || *steps > d.capacity)
    return Status::bad_input(p.op + ": steps=" + p.get("steps") + " is not between 1 and the cache capacity " +
                             std::to_string(d.capacity));
  d.steps = static_cast<int>(*steps);
  const std::string lens = p.get("lens", "ragged");
  if (lens != "ragged" && lens != "full")
    return Status::bad_input(p.op + ": lens=" + lens + " is not ragged or full");
  d.ragged = lens == "ragged";
  d.scale = 1.0 / std::sqrt(static_cast<double>(d.d));
  if (p.has("scale")) {
    auto s = p.get_double("scale", d.scale);
    if (!s || !std::isfinite(*s) || *s <= 0)
      return Status::bad_input(p.op + ": parameter scale=" + p.get("scale") + " is not a positive number");
    d.scale = *s;
  }
  if (p.has("softcap")) {
    auto c = p.get_double("softcap", 0);
    if (!c || !std::isfinite(*c) || *c <= 0)
      return Status::bad_input(p.op + ": parameter softcap=" + p.get("softcap") + " is not a positive number");
    d.softcap = *c;
  }
  if (p.has("window")) {
    auto w = p.get_int("window", 0);
    if (!w) return Status::bad_input(p.op + ": " + w.status().message);
    if (*w < 1)
      return Status::bad_input(p.op + ": parameter window=" + p.get("window") + " is not a positive number of positions");
    d.window = *w;
  }
  return d;
}

Shape kv_cache_q_shape(const KvCacheDesc& d) { return {d.batch, d.heads, d.d}; }
Shape kv_cache_token_shape(const KvCacheDesc& d) { return {d.batch, d.kv_heads, d.d}; }
Shape kv_cache_cache_shape(const KvCacheDesc& d) { return {d.batch, d.kv_heads, d.capacity, d.d}; }

double kv_cache_flops(const KvCacheDesc& d) {
  return 4.0 * static_cast<double>(d.d) * static_cast<double>(d.heads) * static_cast<double>(d.step0_positions());
}

double kv_cache_bytes(const KvCacheDesc& d) {
  const double row = static_cast<double>(storage_bytes(d.cache, d.d));
  const double token = static_cast<double>(storage_bytes(d.dtype, d.d));
  const double reads = 2.0 * row * static_cast<double>(d.kv_heads) * static_cast<double>(d.step0_positions());
  const double writes = 2.0 * row * static_cast<double>(d.batch * d.kv_heads);
  const double small = token * static_cast<double>(2 * d.batch * d.heads + 2 * d.batch * d.kv_heads) +
                       4.0 * static_cast<double>(d.batch) + (d.scaled() ? 8.0 : 0.0);
  return reads + writes + small;
}

}  // namespace dnnb::ops
