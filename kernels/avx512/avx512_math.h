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

// e^x. x = n ln2 + r with |r| <= ln2/2 (two-constant reduction, exact enough with FMA); n
// is rounded by adding and subtracting 1.5 * 2^23 (an FMA and a subtraction: two cheap uops,
// where VRNDSCALEPS is two uops on port 0 of Intel cores); e^r by 1 + r + r^2 Q(r), Q of
// degree 4 fitted minimax in relative error on [-ln2/2, ln2/2] (3.8e-9 with the f32
// coefficients, vs 7.5e-9 for the degree-7 Taylor series it replaces: one FMA less); 2^n
// applied by VSCALEFPS, which rounds once and produces subnormals and Inf correctly.
DNNB_AVX512_INLINE __m512 exp_ps(__m512 x) {
  const __m512 xc = clamp_keep_nan(x, -104.0f, 89.0f);  // beyond: 0 and Inf after scaling
  const __m512 shifter = _mm512_set1_ps(12582912.0f);   // 1.5 * 2^23: rounds to an integer
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), shifter), shifter);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);  // ln2 high part
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860682030941723e-6f), r);     // ln2 - high
  __m512 p = _mm512_set1_ps(1.381461276e-03f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.368710056e-03f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166838899e-02f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666652113e-01f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.999999404e-01f));
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

// Phi(x) = P(N(0,1) <= x) = erfc(-x/sqrt2)/2, accurate in relative terms on both tails, in
// one branch-free formula: with z = |x|/sqrt2, erfc(z)/2 = e^{-z^2} h(t), t = 1/(1 + z/2),
// h(z) = erfc(z) e^{z^2} / 2 fitted as a degree-9 polynomial in t for z in [0, 10.1]
// (relative error 6.1e-8 with the f32 coefficients); Phi is erfc/2 for x < 0 and
// 1 - erfc/2 (>= 1/2, no cancellation) for x >= 0. z^2 = x^2/2 is split exactly with an FMA
// so that e^{-z^2} does not inherit the 2z^2-times amplified rounding error of z.
// (Was: a separate erf polynomial for |x| < 1/sqrt2 and a fit on z >= 0.5 only, both
// evaluated for every lane: ~12 more uops per vector.)
DNNB_AVX512_INLINE __m512 normal_cdf_ps(__m512 x) {
  const __m512 a = _mm512_min_ps(_mm512_set1_ps(20.0f), abs_ps(x));  // NaN kept (2nd operand)
  const __m512 z = _mm512_mul_ps(a, _mm512_set1_ps(0.707106781186547524f));
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
  __m512 h = _mm512_set1_ps(-2.760923281e-02f);
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.323873103e-01f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(-2.217173278e-01f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.118340418e-01f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(7.567844819e-03f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(9.111238271e-02f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.247405261e-01f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.405799538e-01f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(1.411073208e-01f));
  h = _mm512_fmadd_ps(h, t, _mm512_set1_ps(-2.849941438e-06f));
  const __m512 x2_hi = _mm512_mul_ps(a, a);
  const __m512 x2_lo = _mm512_fmsub_ps(a, a, x2_hi);  // x^2 = x2_hi + x2_lo exactly
  __m512 e = exp_ps(_mm512_mul_ps(x2_hi, _mm512_set1_ps(-0.5f)));
  e = _mm512_fnmadd_ps(_mm512_mul_ps(e, x2_lo), _mm512_set1_ps(0.5f), e);  // e^{-lo/2} ~ 1 - lo/2
  const __m512 half_erfc = _mm512_mul_ps(e, h);
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mov_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), half_erfc), negative, half_erfc);
}

}  // namespace dnnb::avx512
