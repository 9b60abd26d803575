// gelu (exact, approximate='none'): 0.5 x (1 + erf(x / sqrt 2)).
#if DNNB_HALF_MATH
// 16-bit tiers (prelude.cl): y = x Phi(x) with Phi(-a) = e^{-a^2/2} h(t), a = |x|,
// t = 1/(1 + kappa a), and Phi(x) = 1 - Phi(-x) for x >= 0 (>= 1/2: no cancellation).
// h(t) = Phi(-a) e^{a^2/2} is smooth and bounded, so a short polynomial in t fits it in
// relative error on the whole tail (as the AVX-512 half tier, docs/avx512.md). NVIDIA's erff
// is a two-range polynomial with an ex2 (~24 instructions, both ranges evaluated); this is one
// exp, one reciprocal and a degree-6 polynomial. Level 2 takes e^{-a^2/2} = 2^(-a^2 log2(e)/2)
// from native_exp2 (raised by 2^32 on bf16 as in dnnb_exp_neg16; the 2^-32 is folded into h's
// coefficients). a is clamped to 15, where e^{-112.5} is exactly 0 in f32: so gelu(-inf) =
// -inf * 0 = NaN as in torch, and +inf gives inf; NaN is lost by fmin but comes back from the
// final x * Phi.
//
// h's coefficients times DNNB_EXP16_UNBIAS (1, or 2^-32: exact, folded by the compiler).
#define DNNB_GELU16_C(c) ((c) * DNNB_EXP16_UNBIAS)
#if defined(DNNB_F16)
// Fitted for this file on a in [0, 7.5] (kappa = 0.28), relative error weighted by how much
// of an f16 ulp it can move: 3.2e-7 where results are normal f16 (|x| < 4.2). Beyond 7.5
// e^{-a^2/2} < 7e-13 makes every f16 result of x < -7.5 round to -0.
#define DNNB_GELU16_KAPPA 0.28f
inline float dnnb_gelu16_h(float t) {
  float h = fma(DNNB_GELU16_C(-1.138416082e-01f), t, DNNB_GELU16_C(4.262942970e-01f));
  h = fma(h, t, DNNB_GELU16_C(-3.049261868e-01f));
  h = fma(h, t, DNNB_GELU16_C(3.355605304e-01f));
  h = fma(h, t, DNNB_GELU16_C(3.127044812e-02f));
  h = fma(h, t, DNNB_GELU16_C(1.268451065e-01f));
  return fma(h, t, DNNB_GELU16_C(-1.202644431e-03f));
}
#else
// bf16: results are normal down to x = -13.1, so h is fitted in relative error on the whole
// of a in [0, 14.5] (kappa = 0.30): 2.1e-6. e^{-a^2/2} from a rounded a^2 is off by
// a^2/2 * 6e-8 relative (5e-6 at a = 13), far inside half a bf16 ulp (2e-3).
#define DNNB_GELU16_KAPPA 0.30f
inline float dnnb_gelu16_h(float t) {
  float h = fma(DNNB_GELU16_C(-8.459313214e-02f), t, DNNB_GELU16_C(2.405724674e-01f));
  h = fma(h, t, DNNB_GELU16_C(-4.864395782e-02f));
  h = fma(h, t, DNNB_GELU16_C(1.647641361e-01f));
  h = fma(h, t, DNNB_GELU16_C(1.067046747e-01f));
  h = fma(h, t, DNNB_GELU16_C(1.212746724e-01f));
  return fma(h, t, DNNB_GELU16_C(-7.978663052e-05f));
}
#endif
inline float dnnb_unary(float x) {
  const float a = fmin(fabs(x), 15.0f);
  const float t = dnnb_recip16(fma(a, DNNB_GELU16_KAPPA, 1.0f));
#if DNNB_HALF_MATH >= 2
  const float e = native_exp2(fma(a * a, -0.72134752044448170f, DNNB_EXP16_BIAS));  // x 2^32 on bf16
#else
  const float e = exp(-0.5f * a * a);
#endif
  const float tail = e * dnnb_gelu16_h(t);  // Phi(-a)
  return x * (x < 0.0f ? tail : 1.0f - tail);
}
#else
inline float dnnb_unary(float x) { return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F)); }
#endif
