// CUDA gelu: y = 0.5 x (1 + erf(x / sqrt 2)) (F.gelu, approximate='none').
// Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
// The default evaluates erf with erff (accurate to 2 ulp) for f32 and with GeluPolyOp below for
// f16/bf16; the alternative "erff" takes erff for f16/bf16 too.
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct GeluOp {
  __device__ float operator()(float x) const {
    return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
  }
};

// f16/bf16 default: erf(t) = 1 - (1 + a1 t + ... + a6 t^6)^-16 for t = |x| / sqrt 2
// (Abramowitz & Stegun 7.1.28, |error| <= 3e-7; the reciprocal is rcp.approx, whose 1-ulp
// error raised to the 16th power adds < 2e-6), sign restored after. erff costs ~2x the
// instructions, and 16-bit gelu is instruction-bound at the copy rate (cuda_common.cuh,
// exp_shifted_16bit: about 32 instructions per element): with erff it runs at ~80% of copy,
// with the polynomial at the copy rate. The error is far under half an f16 ulp (4.9e-4)
// relative, so results differ from erff's by at most one rounding step on near-ties.
struct GeluPolyOp {
  __device__ float operator()(float x) const {
    const float t = fabsf(x) * 0.70710678118654752f;
    float p = fmaf(4.30638e-5f, t, 2.765672e-4f);
    p = fmaf(p, t, 1.520143e-4f);
    p = fmaf(p, t, 9.2705272e-3f);
    p = fmaf(p, t, 4.22820123e-2f);
    p = fmaf(p, t, 7.05230784e-2f);
    p = fmaf(p, t, 1.f);
    float r = __fdividef(1.f, p);  // p >= 1; 0 once p overflows, as wanted
    r *= r;
    r *= r;
    r *= r;
    r *= r;
    const float erf = copysignf(1.f - r, x);
    return 0.5f * x * (1.f + erf);
  }
};

DNNB_REGISTER(register_cuda("gelu", "", "", {DType::f32, DType::f16, DType::bf16}, [](OpCall& call) {
  if (call.problem.dtype == DType::f32) return run_elementwise<1>(call, {"x"}, GeluOp{});
  return run_elementwise<1>(call, {"x"}, GeluPolyOp{});
}));
DNNB_REGISTER(register_cuda(
    "gelu", "erff",
    "f16/bf16 outputs that must equal the f32 erff formula rounded once (the default's "
    "polynomial can flip a near-tie rounding by one step), at about 1.2x the default's time.",
    {DType::f16, DType::bf16},
    [](OpCall& call) { return run_elementwise<1>(call, {"x"}, GeluOp{}); }));

}  // namespace
}  // namespace dnnb::cuda_kernels
