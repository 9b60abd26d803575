// quantize_linear and dequantize_linear (docs/ops-family4.md, "quantize_linear and
// dequantize_linear"): the descriptor both ops, their references, every backend's kernels and
// tests/test_quantize_linear.cpp share, and the two element rules, written once here.
//
// Operands: x, scale (f32) and zero_point (i32), each [1] per tensor or [C] per channel along
// `axis=`; y contiguous, x's shape. quantize_linear: x f32 (the one dtype torch's
// quantize_per_tensor / quantize_per_channel accept), y i8 or u8 (`y.dt=`, default i8).
// dequantize_linear: x i8 or u8 (the problem dtype), y f32 (torch's dequantize() gives float32
// only).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/tensor.h"

namespace dnnb::ops {

struct QlinearDesc {
  DType qtype = DType::i8;  // the integer side: quantize's y, dequantize's x
  int axis = -1;            // the channel dim (normalised to 0..rank-1); -1 per tensor
  int64_t channels = 1;     // shape[axis], 1 per tensor
  int64_t inner = 1;        // elements after the channel dim (product of shape[axis+1:]); numel per tensor
  int32_t qmin = -128, qmax = 127;
  bool per_channel() const { return axis >= 0; }
  // The channel of element i of x in row-major order of its logical shape.
  int64_t channel_of(int64_t i) const { return per_channel() ? (i / inner) % channels : 0; }
};

// The integer dtypes (i8, u8) and the parameters (axis) both ops take.
const std::vector<DType>& qlinear_int_dtypes();
const std::vector<std::string>& qlinear_param_keys();

// The descriptor of a quantize_linear (quantize = true) or dequantize_linear problem; bad_input
// naming the key for an axis outside the rank or a y.dt that is not i8/u8 (quantize).
Result<QlinearDesc> qlinear_desc(const Problem& problem, bool quantize);
Result<Signature> qlinear_signature(const Problem& problem, bool quantize);

// Check and bench problems (docs/ops-family4.md lists them and why).
std::vector<ProblemText> qlinear_check_problems(bool quantize);
std::vector<ProblemText> qlinear_bench_problems(bool quantize);

// Random inputs (docs/ops-family4.md, "Random inputs"): per channel scales cycling through tiny,
// large, power-of-two and other values, zero points through the type's ends; quantize's x at
// multiples of its channel's scale plus exact and near ties, past both saturation ends, and +-Inf;
// dequantize's x every encoding in order.
Status fill_qlinear_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng, bool quantize);

// ---- The element rules (torch 2.15 on CPU, fbgemm's Quantize<T, LEGACY=false> and Dequantize) --

// 1 / scale in f32 (IEEE division, round to nearest even), as fbgemm's inverse_scale.
inline float qlinear_inv_scale(float scale) { return 1.0f / scale; }

// q = clamp(nearbyint(x * inv_scale) + zp, qmin, qmax): x * inv_scale one f32 multiply (not a
// division by scale; ties after it go to even), the zero point added after rounding. Clamped
// in f32 to [qmin - zp, qmax - zp] before the integer add, so +-Inf and products past int32
// saturate; NaN gives qmin (fmax returns the other operand) where torch's result depends on its
// code path (docs). Every backend computes exactly this.
inline int32_t quantize_value(float x, float inv_scale, int32_t zp, int32_t qmin, int32_t qmax) {
  float v = std::nearbyint(x * inv_scale);  // one rounded f32 multiply (SSE: never widened)
  v = std::fmin(std::fmax(v, static_cast<float>(qmin - zp)), static_cast<float>(qmax - zp));
  return static_cast<int32_t>(v) + zp;
}

// y = f32(q - zp) * scale: the difference exact (an integer of at most 9 bits, or any int32 zero
// point's below 2^24), one rounded f32 multiply.
inline float dequantize_value(int32_t q, float scale, int32_t zp) {
  return static_cast<float>(q - zp) * scale;
}

}  // namespace dnnb::ops
