#include "suites/blocks/decode_step.h"

#include <limits>

namespace dnnb {

Status nan_outside_held(const ops::KvCacheDesc& desc, Tensor& cache) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (cache.numel() != desc.batch * desc.kv_heads * desc.capacity * desc.d || !cache.host_data())
    return Status::bad_input("a cache input is not the host tensor [B, KV, C, D] of its kv_cache node (" +
                             cache.describe() + ")");
  for (int64_t row = 0; row < desc.batch * desc.kv_heads * desc.capacity; ++row) {
    const int64_t b = row / (desc.kv_heads * desc.capacity), at = row % desc.capacity;
    if (at < desc.pos0(b) && at >= desc.first(desc.pos0(b))) continue;
    for (int64_t e = 0; e < desc.d; ++e) store_element(cache.host_data(), cache.dtype, row * desc.d + e, nan);
  }
  return Status::ok();
}

void set_decode_steps(BlockDef& def, std::function<Result<ops::KvCacheDesc>(const Problem&)> cache_desc,
                      std::function<Result<BlockGraph>(const Problem&)> build) {
  def.steps = [cache_desc](const Problem& p) {
    auto d = cache_desc(p);
    return d ? d->steps : 1;
  };
  def.step_inputs = [cache_desc](const Problem& p, int step, std::vector<Tensor>& inputs, Rng& rng) -> Status {
    auto desc = cache_desc(p);
    if (!desc) return desc.status();
    if (inputs.size() < 4) return Status::bad_input(p.op + ": fewer inputs than x, pos and the two caches");
    if (step > 0)
      for (int64_t i = 0; i < inputs[0].numel(); ++i) store_element(inputs[0].host_data(), inputs[0].dtype, i, rng.normal());
    auto* pos = static_cast<int32_t*>(inputs[1].host_data());
    for (int64_t b = 0; b < desc->batch; ++b) pos[b] = static_cast<int32_t>(desc->pos0(b) + step);
    if (step == 0)
      for (size_t c : {2, 3}) DNNB_TRY(nan_outside_held(*desc, inputs[c]));
    return Status::ok();
  };
  def.bytes = [cache_desc, build](const Problem& p) {
    auto desc = cache_desc(p);
    auto graph = build(p);
    if (!desc || !graph) return 0.0;
    double bytes = ops::kv_cache_bytes(*desc);
    for (const BlockTensor& t : graph->inputs)
      if (t.weight) bytes += static_cast<double>(storage_bytes(t.dtype, shape_numel(t.shape)));
    bytes += 2.0 * static_cast<double>(storage_bytes(p.dtype, p.shape.at(0) * p.shape.at(2)));
    return bytes;
  };
}

}  // namespace dnnb
