// The typed descriptor of rope and rope_bwd (docs/ops-family3.md, "Position"): the problem's
// shape and params parsed once, with their defaults, and the f32 angle every implementation
// shares (the reference, the fixtures' contract and every kernel compute it the same way).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"

namespace dnnb::ops {

// half: HF's rotate_half, pairs (i, i + rot/2); interleaved: Meta's llama, pairs (2i, 2i + 1).
enum class RopeForm { half, interleaved };
const char* to_string(RopeForm form);

// Shape "BxHxSxD" (HF's [batch, heads, seq, head_dim]); params theta (default 10000, > 0),
// rot (rotary dims, even, 2..D; default D), form=half|interleaved (default half).
struct RopeDesc {
  int64_t batch = 0, heads = 0, seq = 0, dim = 0;
  int64_t rot = 0;
  double theta = 10000.0;
  RopeForm form = RopeForm::half;

  int64_t pairs() const { return rot / 2; }  // angles per position
  Shape x_shape() const { return {batch, heads, seq, dim}; }
  Shape pos_shape() const { return {batch, seq}; }
};

// The param keys of rope and rope_bwd (for check_problem).
const std::vector<std::string>& rope_param_keys();
// bad_input naming the param or the shape when the problem is not a valid rope problem.
Result<RopeDesc> rope_desc(const Problem& problem);

// HF's inverse frequencies (LlamaRotaryEmbedding.compute_default_rope_parameters in f32), each
// step rounded to f32 once: inv_freq[i] = f32(1 / f32(theta_f ^ f32(2i / rot))) for i < rot/2,
// theta_f = f32(theta). The power is taken in double and rounded, so it is the correctly rounded
// f32 power (torch's own f32 pow is faithful, and is 1 ulp off it for a few (theta, rot, i):
// docs/ops-family3.md).
std::vector<float> rope_inv_freq(const RopeDesc& desc);

// The angle of position `pos` for one inverse frequency: f32(f32(pos) * inv_freq), HF's
// `position_ids.float() * inv_freq`. The product of two floats is exact in double, so rounding
// it once gives the f32 product whatever the compiler's contraction settings.
inline float rope_angle(int64_t pos, float inv_freq) {
  return static_cast<float>(static_cast<double>(static_cast<float>(pos)) * static_cast<double>(inv_freq));
}

// What the specs of rope and rope_bwd share (suites/ops/rope.cpp, rope_bwd.cpp).
// Signature: inputs (x or dy) [B, H, S, D] of the problem dtype and pos [B, S] i64 (`pos.dt=i32`
// allowed), output (y or dx) [B, H, S, D]; `layout=` applies to the first input.
Result<Signature> rope_signature(const Problem& problem, const char* in_name, const char* out_name);
// The first input normal(0, 1); pos[b, s] = offset_b + s with offset_b uniform in [0, 4096): a
// prompt continued from a random cache length, as decoding sees it.
Status fill_rope_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);
// 3 FLOPs per rotated element (two products and a sum per output of a pair); sin and cos are
// counted as none, the pass-through columns as none.
double rope_flops(const Problem& problem);
// Check and bench problems, `in_name` naming the first input in the layout cases.
std::vector<ProblemText> rope_check_problems(const std::string& in_name);
std::vector<ProblemText> rope_bench_problems();

}  // namespace dnnb::ops
