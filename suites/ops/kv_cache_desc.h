// The typed descriptor of kv_cache (docs/ops-family3.md, "KV cache"): the append of one token's
// k and v into a cache at given positions, then decode attention of one query row per sequence
// against the cache. Every kernel, the spec and the reference parse a problem through
// kv_cache_desc, so defaults, positions and byte counts live here.
//
// Shape "BxHxCxD": B sequences, H query heads, cache capacity C positions, head dim D.
// Operands (signature order):
//   q [B, H, D], k [B, KV, D], v [B, KV, D]  the new token (problem dtype)
//   pos [B] i32                              where sequence b writes its token; it then attends
//                                            to positions 0..pos[b] (its length is pos[b] + 1)
//   k_cache, v_cache [B, KV, C, D]           the caches (cache dtype; state: updated in place)
//   k_scale, v_scale [1] f32                 only for cache=f8_e4m3fn: stored = e4m3(x / scale)
//   -> o [B, H, D] (problem dtype)
// Storing a token: f32/f16/bf16 caches round the value to the cache dtype (nearest even);
// f8_e4m3fn stores (x / scale) computed in f32, rounded as core/dtype.h f32_to_f8_e4m3fn does
// (torch's .to(float8_e4m3fn): nearest even, past 464 saturated to 448; docs/numerics.md);
// q8_0 quantises each 32-value block of the row
// as ggml's quantize_row_q8_0_ref does (core/dtype.h quantize_row). Reading a position decodes
// it exactly (e4m3 x scale, d x q); the new token is read back from the cache like every other
// position, so attention sees its stored (rounded) value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"

namespace dnnb::ops {

struct KvCacheDesc {
  int64_t batch = 1, heads = 1, kv_heads = 1;  // kv_heads divides heads (GQA)
  int64_t capacity = 1;                        // C: positions per sequence and kv head
  int64_t d = 1;                               // head dim of q, k and v
  DType dtype = DType::f32;                    // q, k, v, o
  DType cache = DType::f32;                    // the caches
  int steps = 3;                               // decode steps a check runs
  bool ragged = true;                          // sequences of different lengths (lens=ragged)
  double scale = 1;                            // score scale, default 1 / sqrt(D)
  double softcap = 0;                          // > 0: scores s -> softcap tanh(s / softcap)
  int64_t window = 0;                          // > 0: only positions > pos[b] - window are read

  int64_t group() const { return heads / kv_heads; }
  bool scaled() const { return cache == DType::f8_e4m3fn; }  // k_scale and v_scale inputs
  // Where sequence b writes at step 0; step s writes at pos0(b) + s. ragged: the first
  // sequence's cache holds C - steps positions before the first step and the others spread
  // down to the last one, whose cache is empty; full: every sequence holds C - steps.
  int64_t pos0(int64_t b) const;
  // The first position a query at position p reads: 0, or p - window + 1 with a window.
  int64_t first(int64_t p) const { return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0; }
  // Positions read at step 0 over the whole batch: sum of (pos0(b) + 1 - first(pos0(b))).
  int64_t step0_positions() const;
};

// Params: kv=<KV heads> (default H), cache=f32|f16|bf16|f8_e4m3fn|q8_0 (default the problem
// dtype), steps=<n> (default 3, at most C), lens=ragged|full (default ragged), scale=<s>,
// softcap=<c> (Gemma 2's attention softcap: scores s -> c tanh(s / c), after the scale),
// window=<W> (Gemma 2's sliding window: the query at pos[b] reads positions pos[b] - W + 1 ..
// pos[b] only; the store is unchanged).
// q8_0 needs D a multiple of 32.
Result<KvCacheDesc> kv_cache_desc(const Problem& problem);
const std::vector<std::string>& kv_cache_param_keys();

// The cache dtypes the op takes.
const std::vector<DType>& kv_cache_dtypes();

Shape kv_cache_q_shape(const KvCacheDesc& d);      // [B, H, D] (q and o)
Shape kv_cache_token_shape(const KvCacheDesc& d);  // [B, KV, D] (k and v)
Shape kv_cache_cache_shape(const KvCacheDesc& d);  // [B, KV, C, D]

// FLOPs of step 0: 4 D per (query head, position read) (q.k and p v), FlashAttention's count.
double kv_cache_flops(const KvCacheDesc& d);
// Bytes of step 0: q, k, v, pos and o once, the positions read of both caches, the token's rows
// written. Decode is bound by the cache reads.
double kv_cache_bytes(const KvCacheDesc& d);

}  // namespace dnnb::ops
