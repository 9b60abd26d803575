// Vector transcendental functions for the AVX-512 kernels, 16 f32 lanes at a time.
// Accuracy measured against the f64 C library over dense sweeps: docs/avx512.md.
//
// Polynomial coefficients were fitted for this file (weighted least squares on Chebyshev
// points, reweighted towards minimax) in relative error; the fitting ranges are given with
// each table. NaN propagates through every function; +-Inf give the limits.
#pragma once
#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

// max/min that return x when x is NaN (VMAXPS returns its second operand if either is NaN).
DNNB_AVX512_INLINE __m512 clamp_keep_nan(__m512 x, float lo, float hi) {
  return _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), x));
}

DNNB_AVX512_INLINE __m512 abs_ps(__m512 x) { return _mm512_abs_ps(x); }

// e^x. x = n ln2 + r with |r| <= ln2/2 (two-constant reduction, exact enough with FMA);
// e^r by its degree-7 Taylor polynomial (truncation 7.5e-9 relative on that range);
// 2^n applied by VSCALEFPS, which rounds once and produces subnormals and Inf correctly.
DNNB_AVX512_INLINE __m512 exp_ps(__m512 x) {
  const __m512 xc = clamp_keep_nan(x, -104.0f, 89.0f);  // beyond: 0 and Inf after scaling
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);  // ln2 high part
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);     // ln2 - high
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// 1/(1+e^-x) without overflow or cancellation: with e = e^-|x|, it is 1/(1+e) for x >= 0
// and e/(1+e) for x < 0 (so tiny results stay accurate instead of flushing to 0).
DNNB_AVX512_INLINE __m512 sigmoid_ps(__m512 x) {
  const __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), abs_ps(x)));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 numerator = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), negative, e);
  return _mm512_div_ps(numerator, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// tanh. |x| < 0.625: x + x^3 P(x^2) (P fitted on x in [0, 0.625], relative error of P
// 4.8e-9); otherwise 1 - 2/(e^{2|x|} + 1), which has no cancellation there (tanh >= 0.55).
DNNB_AVX512_INLINE __m512 tanh_ps(__m512 x) {
  const __m512 a = abs_ps(x);
  const __m512 s = _mm512_mul_ps(a, a);
  __m512 p = _mm512_set1_ps(2.292823174e-03f);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-8.344022348e-03f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(2.176894505e-02f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-5.395926329e-02f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.333330358e-01f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-3.333333317e-01f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(a, s), p, a);
  const __m512 e = exp_ps(_mm512_add_ps(a, a));
  const __m512 large = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                                     _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  const __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  const __m512 t = _mm512_mask_mov_ps(large, is_small, small);
  // Copy x's sign (also keeps -0 and NaN as they are).
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
}

// Phi(x) = P(N(0,1) <= x) = erfc(-x/sqrt2)/2, accurate in relative terms on both tails:
// - |x| < 1/sqrt2 (z = |x|/sqrt2 < 0.5): 1/2 + sign(x) erf(z)/2, erf(z) = z Q(z^2) with Q
//   fitted on [0, 0.5] (relative error 1.4e-9);
// - otherwise erfc(z) = e^{-z^2} g(t), t = 1/(1 + z/2), g(z) = erfc(z) e^{z^2} fitted as a
//   degree-9 polynomial in t for z in [0.5, 10.1] (relative error 1.4e-9); Phi is erfc/2
//   for x < 0 and 1 - erfc/2 for x > 0. z^2 = x^2/2 is split exactly with an FMA so that
//   e^{-z^2} does not inherit the 2z^2-times amplified rounding error of z.
DNNB_AVX512_INLINE __m512 normal_cdf_ps(__m512 x) {
  const __m512 a = clamp_keep_nan(abs_ps(x), 0.0f, 20.0f);
  const __m512 z = _mm512_mul_ps(a, _mm512_set1_ps(0.707106781186547524f));
  // Small |x|.
  const __m512 z2 = _mm512_mul_ps(z, z);
  __m512 q = _mm512_set1_ps(4.717989117e-03f);
  q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(-2.675718379e-02f));
  q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(1.128282280e-01f));
  q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(-3.761260857e-01f));
  q = _mm512_fmadd_ps(q, z2, _mm512_set1_ps(1.128379166e+00f));
  const __m512 half_erf = _mm512_mul_ps(_mm512_mul_ps(z, q), _mm512_set1_ps(0.5f));
  // Tails.
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
  __m512 g = _mm512_set1_ps(-7.444230422e-02f);
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(3.513793827e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(-6.112577102e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(4.067524787e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(-1.084392531e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(2.356014645e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(2.347596605e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(2.836558181e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(2.819787915e-01f));
  g = _mm512_fmadd_ps(g, t, _mm512_set1_ps(3.766709073e-06f));
  const __m512 x2_hi = _mm512_mul_ps(a, a);
  const __m512 x2_lo = _mm512_fmsub_ps(a, a, x2_hi);  // x^2 = x2_hi + x2_lo exactly
  __m512 e = exp_ps(_mm512_mul_ps(x2_hi, _mm512_set1_ps(-0.5f)));
  e = _mm512_fnmadd_ps(_mm512_mul_ps(e, x2_lo), _mm512_set1_ps(0.5f), e);  // e^{-lo/2} ~ 1 - lo/2
  const __m512 half_erfc = _mm512_mul_ps(_mm512_mul_ps(e, g), _mm512_set1_ps(0.5f));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __mmask16 small = _mm512_cmp_ps_mask(z, _mm512_set1_ps(0.5f), _CMP_LT_OQ);
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  __m512 tail = _mm512_mask_mov_ps(_mm512_sub_ps(one, half_erfc), negative, half_erfc);
  __m512 centre = _mm512_mask_mov_ps(_mm512_add_ps(half, half_erf), negative, _mm512_sub_ps(half, half_erf));
  return _mm512_mask_mov_ps(tail, small, centre);
}

}  // namespace dnnb::avx512
