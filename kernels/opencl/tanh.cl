// tanh: the OpenCL built-in (full precision) for f32 and without a 16-bit math tier.
#if DNNB_HALF_MATH
// 16-bit tiers: one rational function x P(x^2) / Q(x^2) (Q(0) = 1), fitted for this file in
// relative error up to the point where tanh rounds to +-1 in the output dtype; beyond it the
// result is +-1 (also for +-inf). Odd in x, so -0 stays -0; NaN fails the |x| test and comes
// out of the rational function. The quotient uses dnnb_recip16 (prelude.cl; Newton-refined at
// level 1 only). NVIDIA's tanhf evaluates a polynomial and 1 - 2/(e^{2x} + 1) and selects.
#if defined(DNNB_F16)
// 1 - tanh(x) < 2^-12 (rounds to 1 in f16) for x >= 4.5053; P, Q of degrees 2, 3 fitted on
// [0, 4.51]: relative error 1.1e-6 with these f32 coefficients (half an f16 ulp is >= 2.4e-4).
#define DNNB_TANH16_CUT 4.51f
inline float dnnb_tanh16_p(float s) { return fma(fma(1.695891027e-03f, s, 1.174126044e-01f), s, 9.999990463e-01f); }
inline float dnnb_tanh16_q(float s) {
  return fma(fma(fma(6.866507465e-05f, s, 1.862041838e-02f), s, 4.507377744e-01f), s, 1.0f);
}
#else
// bf16: 1 - tanh(x) < 2^-9 for x >= 3.4653; degrees 2, 2 on [0, 3.47]: 5.4e-6 (half a bf16
// ulp is >= 2e-3 relative).
#define DNNB_TANH16_CUT 3.47f
inline float dnnb_tanh16_p(float s) { return fma(fma(8.243502816e-04f, s, 1.066753417e-01f), s, 9.999947548e-01f); }
inline float dnnb_tanh16_q(float s) { return fma(fma(1.421113778e-02f, s, 4.399634004e-01f), s, 1.0f); }
#endif
inline float dnnb_unary(float x) {
  const float s = x * x;
  const float y = x * dnnb_tanh16_p(s) * dnnb_recip16(dnnb_tanh16_q(s));
  return fabs(x) >= DNNB_TANH16_CUT ? copysign(1.0f, x) : y;  // large |x|: y may be NaN, unused
}
#else
inline float dnnb_unary(float x) { return tanh(x); }
#endif
