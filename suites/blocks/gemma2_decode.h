// Gemma2DecoderLayer's decode step as graph pieces (gemma2_decode.cpp), shared by the
// gemma2_decode block and gemma2_lm (gemma2_decode_lm.cpp), whose layers are the same graph under
// their state_dict prefix; gemma2_layer declares its weights with them too.
#pragma once
#include <string>

#include "core/block.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb::gemma2 {

struct DecodeDims {
  int64_t b = 1, e = 1, h = 1, kv = 1, f = 1, d = 2;
  std::string cache;  // the kv_cache node's problem text (shape and params)
  std::string eps;    // ":eps=...,form=gemma", the norms' params
  std::string theta;  // ":theta=...", rope's
};

// The layer's dims from the problem "Bx1xE:heads,kv,head_dim,ffn[,qscale][,softcap][,eps][,theta]"
// and the cache's ctx, steps, lens and window ("" for a global layer).
Result<DecodeDims> decode_dims(const Problem& p, int64_t ctx, const std::string& steps, const std::string& lens,
                               const std::string& window);

// A layer's 11 weights at `at` + their state_dict names, in the order of the block's inputs
// (gemma2_layer's, at "", too).
void declare_layer_weights(BlockBuilder& g, const std::string& at, int64_t e, int64_t h, int64_t kv, int64_t d, int64_t f);

// One layer: its 11 weights at `at` + their state_dict names, the caches `at`k_cache and
// `at`v_cache (declared by the caller as state), x [B, 1, E] -> y [B, 1, E]. x_norm_layout and
// x_add_layout: x's layout params for input_layernorm and residual_1 ("" for none).
void add_decode_layer(BlockBuilder& g, const std::string& at, const DecodeDims& dm, const std::string& x,
                      const std::string& pos, const std::string& y, const std::string& x_norm_layout,
                      const std::string& x_add_layout);

}  // namespace dnnb::gemma2
