// CUDA gelu_bwd and silu_bwd: dx = dy f'(x), as two-input functors of the elementwise kernels
// (elementwise.cuh: the flat kernel for contiguous x, dy and dx, 16-byte vectors, all loads of
// a thread issued before the math; the rows kernel for strided views), f32 math, dx rounded
// once.
//
// The slopes avoid the cancellations of torch's written forms where |x| is large:
//  - silu'(x) = s (1 + x (1 - s)) and gelu_tanh'(x) = s (1 + x (1 - s) (2k + 6kc x^2)) with
//    s = sigmoid(z) (z = x, or 2u = 2k (x + c x^3)) and 1 - s from one exponential e = e^-|z|:
//    s = 1/(1+e) for z >= 0 and e/(1+e) for z < 0, 1 - s the other (sigmoid_pair);
//  - gelu'(x) = Phi(x) + x phi(x) with Phi = erfc(-x/sqrt2)/2 (erfcf keeps relative accuracy on
//    the negative tail) and phi's e^{-x^2/2} from x^2 split exactly by an FMA.
// f32 outputs take expf and a correctly rounded division; f16/bf16 outputs, which are
// instruction-bound at the copy rate (cuda_common.cuh, exp_shifted_16bit), take ex2.approx and
// __fdividef (both within 2^-21 relative, far below half a 16-bit ulp).
//
// gelu (approximate=none) for f16/bf16 outputs takes one exponential for both terms: with
// a = |x|, t = 1/(1 + 0.3 a) and h(t) the polynomial fitted to Phi(-a) e^{a^2/2} on [0, 14.5]
// (relative error 2.1e-6; the OpenCL gelu's bf16 fit, gelu.cl), Phi(-a) = e h and
// phi = e / sqrt(2 pi) with e = e^{-a^2/2}, so
//   x < 0: gelu' = e (h - a / sqrt(2 pi));  x >= 0: gelu' = 1 - e h + a e / sqrt(2 pi).
#include "kernels/cuda/elementwise.cuh"
#include "suites/ops/act_bwd_common.h"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr float kInvSqrt2Pi = 0.398942280401432678f;
inline constexpr float kTwoK = 1.5957691216057308f;     // 2 sqrt(2/pi)
inline constexpr float kSixKC = 0.21406444881780076f;   // 6 sqrt(2/pi) 0.044715
inline constexpr float kTwoKC = 0.071354816272600245f;  // 2 sqrt(2/pi) 0.044715

// e^x: expf for f32 outputs; ex2.approx (x log2e rounded once) for 16-bit outputs.
template <bool kFast>
__device__ __forceinline__ float exp_of(float x) {
  if constexpr (kFast) return ex2_approx_ftz(x * kLog2e);
  return expf(x);
}

// s = sigmoid(z) and 1 - s, neither cancelling (see the file comment). NaN z gives NaN.
template <bool kFast>
__device__ __forceinline__ void sigmoid_pair(float z, float& s, float& one_minus_s) {
  const float e = exp_of<kFast>(-fabsf(z));
  const float r = kFast ? __fdividef(1.f, 1.f + e) : 1.f / (1.f + e);
  const float er = e * r;
  const bool negative = z < 0.f;
  s = negative ? er : r;
  one_minus_s = negative ? r : er;
}

template <bool kFast>
struct SiluBwdOp {
  __device__ float operator()(float x, float dy) const {
    float s, oms;
    sigmoid_pair<kFast>(x, s, oms);
    return dy * (s * fmaf(x, oms, 1.f));
  }
};

template <bool kFast>
struct GeluTanhBwdOp {
  __device__ float operator()(float x, float dy) const {
    const float x2 = x * x;
    float s, oms;
    sigmoid_pair<kFast>(x * fmaf(x2, kTwoKC, kTwoK), s, oms);
    const float w = fmaf(x2, kSixKC, kTwoK);
    return dy * (s * fmaf(x * oms, w, 1.f));
  }
};

// gelu' for f32 outputs, with erfcf and expf, x^2 split so that e^{-x^2/2} does not inherit
// x^2/2 times its rounding.
struct GeluErfcBwdOp {
  __device__ float operator()(float x, float dy) const {
    const float cdf = 0.5f * erfcf(-x * 0.70710678118654752f);
    const float x2 = x * x;
    float e = expf(-0.5f * x2);
    e = fmaf(-0.5f * fmaf(x, x, -x2), e, e);  // e^{-lo/2} ~ 1 - lo/2
    return dy * fmaf(x * kInvSqrt2Pi, e, cdf);
  }
};

// gelu' for 16-bit outputs from one exponential (see the file comment). a is
// clamped to 14.5, where e^{-a^2/2} (1e-46) is 0 after ftz: gelu'(x) is then 0 or 1 exactly
// (every bf16 result of x < -13.1 rounds to 0). NaN x: fminf drops it, so it is put back.
struct GeluSharedBwdOp {
  __device__ float operator()(float x, float dy) const {
    const float a = fminf(fabsf(x), 14.5f);
    const float t = __fdividef(1.f, fmaf(a, 0.30f, 1.f));
    float h = fmaf(-8.459313214e-02f, t, 2.405724674e-01f);
    h = fmaf(h, t, -4.864395782e-02f);
    h = fmaf(h, t, 1.647641361e-01f);
    h = fmaf(h, t, 1.067046747e-01f);
    h = fmaf(h, t, 1.212746724e-01f);
    h = fmaf(h, t, -7.978663052e-05f);
    const float e = ex2_approx_ftz(a * a * (-0.5f * kLog2e));
    const float slope = x < 0.f ? e * fmaf(-a, kInvSqrt2Pi, h) : fmaf(e, fmaf(a, kInvSqrt2Pi, -h), 1.f);
    return dy * (fabsf(x) <= 3.402823466e38f ? slope : x - x);
  }
};

Status run_gelu_bwd(OpCall& call) {
  auto tanh_form = ops::gelu_bwd_tanh(call.problem);
  if (!tanh_form) return tanh_form.status();
  const bool f32 = call.problem.dtype == DType::f32;
  if (*tanh_form)
    return f32 ? run_elementwise<2>(call, {"x", "dy"}, GeluTanhBwdOp<false>{})
               : run_elementwise<2>(call, {"x", "dy"}, GeluTanhBwdOp<true>{});
  if (f32) return run_elementwise<2>(call, {"x", "dy"}, GeluErfcBwdOp{});
  return run_elementwise<2>(call, {"x", "dy"}, GeluSharedBwdOp{});
}

Status run_silu_bwd(OpCall& call) {
  if (call.problem.dtype == DType::f32) return run_elementwise<2>(call, {"x", "dy"}, SiluBwdOp<false>{});
  return run_elementwise<2>(call, {"x", "dy"}, SiluBwdOp<true>{});
}

DNNB_REGISTER(register_cuda("gelu_bwd", "", "", {DType::f32, DType::f16, DType::bf16}, run_gelu_bwd));
DNNB_REGISTER(register_cuda("silu_bwd", "", "", {DType::f32, DType::f16, DType::bf16}, run_silu_bwd));

}  // namespace
}  // namespace dnnb::cuda_kernels
