// The nodes of transformers' Zamba2MLP (suites/blocks/zamba2_mlp.cpp), shared by zamba2_mlp and
// zamba2_attn_layer, whose feed_forward it is.
#pragma once
#include <string>

#include "core/block.h"

namespace dnnb {

// Declares the MLP's weights under `prefix` ("" or "feed_forward."), by their state_dict names
// (gate_up_proj.weight [2F, E], down_proj.weight [E, F], gate_up_proj_adapter_list.0.{0,1}.weight
// [R, E] and [2F, R]), and its nodes from `in` ([M, E]) to `out` ([M, E]).
void zamba2_mlp_weights(BlockBuilder& g, const std::string& prefix, int64_t e, int64_t f, int64_t rank);
void zamba2_mlp_nodes(BlockBuilder& g, const std::string& prefix, const std::string& in, const std::string& out,
                      int64_t m, int64_t e, int64_t f, int64_t rank);

}  // namespace dnnb
