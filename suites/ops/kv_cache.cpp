// kv_cache: store one token's k and v per sequence into the caches at pos[b], then decode
// attention of one query row per head against positions 0..pos[b] (suites/ops/kv_cache_desc.h
// for the operands and the store rule; docs/ops-family3.md, "KV cache").
// torch: k_cache[b, :, pos[b]] = k[b] (cast as the cache stores it); then
//   F.scaled_dot_product_attention(q[b, :, None], K, V, scale=scale, enable_gqa=True) with K, V
//   the decoded positions 0..pos[b].
// The caches are state (TensorSpec::state): a check runs `steps` decode steps, the positions
// advancing by one per step, compares o at every step and both caches after the last. Positions
// no step has written hold NaN, so a kernel that reads past a sequence's length fails.
// Tolerance class attention: o's bound is sdpa's over the positions read (reference/sdpa.h);
// the caches compare exactly (the store is one rounding into the cache dtype).
// FLOP and byte model: kv_cache_desc.h (decode is bound by the cache reads).
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/host_device.h"
#include "reference/kv_cache.h"
#include "reference/register.h"
#include "suites/ops/kv_cache_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

// f8_e4m3fn's scales: not powers of two (the division rounds), and small enough that the
// normal(0, 1) values the fill draws stay far inside e4m3's range.
constexpr float kKScale = 0.0371f, kVScale = 0.0297f;

Result<Signature> kv_cache_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), ops::kv_cache_param_keys(), 4));
  auto d = ops::kv_cache_desc(p);
  if (!d) return d.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("q", p.dtype, ops::kv_cache_q_shape(*d)),
                ops::tensor_spec("k", p.dtype, ops::kv_cache_token_shape(*d)),
                ops::tensor_spec("v", p.dtype, ops::kv_cache_token_shape(*d)),
                ops::tensor_spec("pos", DType::i32, {d->batch})};
  for (const char* name : {"k_cache", "v_cache"}) {
    TensorSpec cache = ops::tensor_spec(name, d->cache, ops::kv_cache_cache_shape(*d));
    cache.state = true;
    sig.inputs.push_back(cache);
  }
  if (d->scaled()) {
    sig.inputs.push_back(ops::tensor_spec("k_scale", DType::f32, {1}));
    sig.inputs.push_back(ops::tensor_spec("v_scale", DType::f32, {1}));
  }
  sig.outputs = {ops::tensor_spec("o", p.dtype, ops::kv_cache_q_shape(*d))};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));  // q, read through its strides
  return sig;
}

// The token's q, k, v (normal(0, 1) in the problem dtype) and its positions at step `step`.
void fill_token(const ops::KvCacheDesc& d, int step, std::vector<Tensor>& inputs, Rng& rng) {
  for (size_t i = 0; i < 3; ++i)
    for (int64_t e = 0; e < inputs[i].numel(); ++e) store_element(inputs[i].host_data(), inputs[i].dtype, e, rng.normal());
  auto* pos = static_cast<int32_t*>(inputs[3].host_data());
  for (int64_t b = 0; b < d.batch; ++b) pos[b] = static_cast<int32_t>(d.pos0(b) + step);
}

// The caches: positions first(pos0(b)) .. pos0(b) - 1 hold normal(0, 1) values stored as the op
// stores them; the rest NaN (with a window, also the positions before it that no step reads). Up to kDistinctRows rows are drawn and repeated through larger caches (bench
// sizes reach gigabytes; the values only need to be ordinary numbers there).
Status fill_cache(const ops::KvCacheDesc& d, Tensor& cache, float scale, Rng& rng) {
  constexpr int64_t kDistinctRows = 1024;
  const int64_t rows = d.batch * d.kv_heads * d.capacity;
  const size_t row_bytes = storage_bytes(d.cache, d.d);
  const int64_t distinct = std::min(rows, kDistinctRows);
  auto drawn = empty_tensor(scratch_host(), d.cache, {distinct + 1, d.d});
  if (!drawn) return drawn.status();
  std::vector<float> x(d.d);
  for (int64_t r = 0; r < distinct; ++r) {
    for (auto& e : x) e = static_cast<float>(rng.normal());
    DNNB_TRY(reference::store_cache_row(*drawn, r, x.data(), d.d, scale));
  }
  std::fill(x.begin(), x.end(), std::numeric_limits<float>::quiet_NaN());
  DNNB_TRY(reference::store_cache_row(*drawn, distinct, x.data(), d.d, scale));
  const auto* src = static_cast<const unsigned char*>(drawn->host_data());
  auto* dst = static_cast<unsigned char*>(cache.host_data());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (d.kv_heads * d.capacity), p = r % d.capacity;
    const int64_t from = p < d.pos0(b) && p >= d.first(d.pos0(b)) ? r % distinct : distinct;
    std::memcpy(dst + r * row_bytes, src + from * row_bytes, row_bytes);
  }
  return Status::ok();
}

Status fill_kv_cache_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
  auto d = ops::kv_cache_desc(p);
  if (!d) return d.status();
  fill_token(*d, 0, inputs, rng);
  const float ks = d->scaled() ? kKScale : 1.0f, vs = d->scaled() ? kVScale : 1.0f;
  DNNB_TRY(fill_cache(*d, inputs[4], ks, rng));
  DNNB_TRY(fill_cache(*d, inputs[5], vs, rng));
  if (d->scaled()) {
    *static_cast<float*>(inputs[6].host_data()) = kKScale;
    *static_cast<float*>(inputs[7].host_data()) = kVScale;
  }
  return Status::ok();
}

OpSpec make_kv_cache_spec() {
  OpSpec spec = ops::op_spec("3", "kv_cache",
                             "k_cache[b, :, pos[b]] = k[b]; v_cache[b, :, pos[b]] = v[b]; "
                             "F.scaled_dot_product_attention(q[b, :, None], k_cache[b, :, :pos[b]+1], "
                             "v_cache[b, :, :pos[b]+1], enable_gqa=True) (softcap=, window=: Gemma 2's eager "
                             "attention on the cache: s -> c tanh(s/c), positions > pos[b] - window)",
                             ops::float_dtypes(), ToleranceClass::attention);
  // Parameters in sorted order (a problem's text round-trips).
  for (const char* cache : {"", "cache=f16,", "cache=bf16,", "cache=f8_e4m3fn,", "cache=q8_0,"})
    spec.check_problems.push_back(std::string("3x4x40x64:") + cache + "kv=2");  // ragged: 38, 19 and 1 positions
  for (const char* cache : {"bf16", "f8_e4m3fn", "q8_0"})
    spec.check_problems.push_back(std::string("2x8x300x128:cache=") + cache + ",kv=1,steps=2");  // MQA
  spec.check_problems.push_back("4x8x1100x128:cache=f16,kv=2,lens=full,steps=2");  // past one split of keys
  spec.check_problems.push_back("2x4x50x256:cache=bf16,kv=4,scale=0.1");           // head dim 256
  spec.check_problems.push_back("5x4x17x96:cache=q8_0,kv=1");                      // 3 blocks a row
  spec.check_problems.push_back("2x4x24x64:cache=bf16,kv=2,layout=padded");        // q's rows padded
  spec.check_problems.push_back("2x4x24x64:kv=2,layout=transposed");               // q [B, D, H] in memory
  // Gemma 2's attention: softcap and sliding window (positions before the window hold NaN).
  spec.check_problems.push_back("3x4x40x64:kv=2,softcap=50,window=16");  // windows cut 38 and 19, not 1
  spec.check_problems.push_back("2x8x300x256:cache=bf16,kv=4,scale=0.0625,softcap=50,steps=2,window=64");
  spec.check_problems.push_back("4x8x1100x128:cache=f16,kv=2,lens=full,softcap=30,steps=2,window=600");  // splits
  spec.check_problems.push_back("2x8x300x128:cache=f8_e4m3fn,kv=1,softcap=50,steps=2,window=100");
  spec.check_problems.push_back("5x4x17x96:cache=q8_0,kv=1,window=5");
  spec.check_problems.push_back("3x4x20x32:kv=2,window=1");                  // its own token only
  spec.check_problems.push_back("2x4x50x64:kv=1,scale=1,softcap=5");        // scores far past the cap
  // Decode as served (Llama 3 8B's 32 query and 8 kv heads, D 128), full contexts.
  for (const char* cache : {"bf16", "f8_e4m3fn", "q8_0"}) {
    spec.bench_problems.push_back(ProblemText(std::string("16x32x32768x128:cache=") + cache + ",kv=8,lens=full,steps=1", {DType::bf16}));
    spec.bench_problems.push_back(ProblemText(std::string("64x32x4096x128:cache=") + cache + ",kv=8,lens=full,steps=1", {DType::bf16}));
  }
  spec.signature = kv_cache_signature;
  spec.fill_inputs = fill_kv_cache_inputs;
  spec.steps = [](const Problem& p) {
    auto d = ops::kv_cache_desc(p);
    return d ? d->steps : 1;
  };
  spec.step_inputs = [](const Problem& p, int step, std::vector<Tensor>& inputs, Rng& rng) -> Status {
    auto d = ops::kv_cache_desc(p);
    if (!d) return d.status();
    fill_token(*d, step, inputs, rng);
    return Status::ok();
  };
  spec.flops = [](const Problem& p) {
    auto d = ops::kv_cache_desc(p);
    return d ? ops::kv_cache_flops(*d) : 0.0;
  };
  spec.bytes = [](const Problem& p) {
    auto d = ops::kv_cache_desc(p);
    return d ? ops::kv_cache_bytes(*d) : 0.0;
  };
  spec.output_bounds = reference::kv_cache_bounds;
  spec.reference = reference::kv_cache;
  return spec;
}

DNNB_REGISTER(register_op(make_kv_cache_spec()));

}  // namespace
}  // namespace dnnb
