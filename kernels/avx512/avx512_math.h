// Vector transcendental functions for the AVX-512 kernels, on Vecs<K> (K vectors of 16 f32
// lanes, each step applied to all K before the next: see Vecs in avx512_common.h).
// Accuracy measured against the f64 C library over dense sweeps: docs/avx512.md.
//
// Two accuracy tiers, picked by the output dtype (accuracy_for<Fmt>):
// - Accuracy::full, for f32 outputs: the documented errors (0.9 to ~10 ulp of f32).
// - Accuracy::half, for outputs rounded to f16 or bf16 next: relative error below ~1e-5
//   (docs/avx512.md), 49x below half an f16 ulp (2^-11) and 390x below half a bf16 ulp. The
//   tolerance for 16-bit elementwise outputs is 1 eps (conformance.md): the final rounding
//   takes half of it, the f32 error may take the rest; at 1e-5 a result rounds differently
//   from the correctly rounded one only within 1e-5 of a rounding boundary (~1% of f16
//   results, ~0.1% of bf16), and never by more than 1 ulp. This tier uses lower polynomial
//   degrees, a one-constant exp reduction and a reciprocal estimate with one Newton step
//   instead of VDIVPS (whose 512-bit throughput, ~10 cycles on Intel cores, alone exceeds the
//   per-vector budget of a 16-bit op at 80% of copy bandwidth). f32 keeps VDIVPS: there the
//   quotient overlaps ~20 other uops per vector, and the reciprocal would add ~0.6 ulp.
//
// Polynomial coefficients were fitted for this file (weighted least squares on Chebyshev
// points, reweighted towards minimax, in relative error); the fitting ranges are given with
// each table. NaN propagates through every function; +-Inf give the limits.
#pragma once
#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

enum class Accuracy { full, half };
template <class Fmt>
inline constexpr Accuracy accuracy_for = Fmt::dtype == DType::f32 ? Accuracy::full : Accuracy::half;

// ---- Vecs<K> arithmetic: one intrinsic per vector, all K per step -----------------------

#define DNNB_EACH _Pragma("GCC unroll 8") for (int k = 0; k < K; ++k)

// f applied to lane k of each argument, for every k: one place for the K-way loop.
template <int K, class F, class... Args>
DNNB_AVX512_INLINE Vecs<K> each(F f, const Args&... args) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = f(args.v[k]...);
  return r;
}

template <int K>
DNNB_AVX512_INLINE Vecs<K> splat(float c) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = _mm512_set1_ps(c);
  return r;
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> add(const Vecs<K>& a, const Vecs<K>& b) {
  return each<K>([](__m512 x, __m512 y) DNNB_AVX512_LAMBDA { return _mm512_add_ps(x, y); }, a, b);
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> sub(const Vecs<K>& a, const Vecs<K>& b) {
  return each<K>([](__m512 x, __m512 y) DNNB_AVX512_LAMBDA { return _mm512_sub_ps(x, y); }, a, b);
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> mul(const Vecs<K>& a, const Vecs<K>& b) {
  return each<K>([](__m512 x, __m512 y) DNNB_AVX512_LAMBDA { return _mm512_mul_ps(x, y); }, a, b);
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> div(const Vecs<K>& a, const Vecs<K>& b) {
  return each<K>([](__m512 x, __m512 y) DNNB_AVX512_LAMBDA { return _mm512_div_ps(x, y); }, a, b);
}
template <int K>  // a b + c
DNNB_AVX512_INLINE Vecs<K> fmadd(const Vecs<K>& a, const Vecs<K>& b, const Vecs<K>& c) {
  return each<K>([](__m512 x, __m512 y, __m512 z) DNNB_AVX512_LAMBDA { return _mm512_fmadd_ps(x, y, z); }, a, b, c);
}
template <int K>  // c - a b
DNNB_AVX512_INLINE Vecs<K> fnmadd(const Vecs<K>& a, const Vecs<K>& b, const Vecs<K>& c) {
  return each<K>([](__m512 x, __m512 y, __m512 z) DNNB_AVX512_LAMBDA { return _mm512_fnmadd_ps(x, y, z); }, a, b, c);
}
template <int K>  // a b - c
DNNB_AVX512_INLINE Vecs<K> fmsub(const Vecs<K>& a, const Vecs<K>& b, const Vecs<K>& c) {
  return each<K>([](__m512 x, __m512 y, __m512 z) DNNB_AVX512_LAMBDA { return _mm512_fmsub_ps(x, y, z); }, a, b, c);
}
// min/max(c, x) return x when x is NaN (VMINPS/VMAXPS return their second operand then).
template <int K>
DNNB_AVX512_INLINE Vecs<K> min_keep_nan(float c, const Vecs<K>& x) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = _mm512_min_ps(_mm512_set1_ps(c), x.v[k]);
  return r;
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> max_keep_nan(float c, const Vecs<K>& x) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = _mm512_max_ps(_mm512_set1_ps(c), x.v[k]);
  return r;
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> clamp_keep_nan(const Vecs<K>& x, float lo, float hi) {
  return min_keep_nan(hi, max_keep_nan(lo, x));
}
template <int K>
DNNB_AVX512_INLINE Vecs<K> abs(const Vecs<K>& x) {
  return each<K>([](__m512 v) DNNB_AVX512_LAMBDA { return _mm512_abs_ps(v); }, x);
}
template <int K>  // -|x|: the sign bit set (one OR)
DNNB_AVX512_INLINE Vecs<K> neg_abs(const Vecs<K>& x) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x.v[k]), _mm512_set1_epi32(INT32_MIN)));
  return r;
}
template <int K>  // |magnitude| with the sign of `sign` (one VPTERNLOGD; -0 and NaN kept as they are)
DNNB_AVX512_INLINE Vecs<K> copy_sign(const Vecs<K>& magnitude, const Vecs<K>& sign) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
      _mm512_set1_epi32(INT32_MIN), _mm512_castps_si512(sign.v[k]), _mm512_castps_si512(magnitude.v[k]), 0xca));  // a ? b : c
  return r;
}
template <int K>  // a 2^floor(b), rounded once (subnormals and Inf as they come)
DNNB_AVX512_INLINE Vecs<K> scalef(const Vecs<K>& a, const Vecs<K>& b) {
  return each<K>([](__m512 x, __m512 y) DNNB_AVX512_LAMBDA { return _mm512_scalef_ps(x, y); }, a, b);
}
// 1/d for finite d >= 1 or d <= -1, for the half tier: VRCP14PS (relative error <= 2^-14)
// and one Newton step (error squared, 2^-28, then one rounding: within 0.5 + 2^-4 ulp of
// f32), 5 uops where VDIVPS is one uop of the divider (512-bit throughput ~10 cycles on Intel
// cores, shared by two hyperthreads). d must not be 0, subnormal or infinite (VRCP14PS gives
// 0 for Inf, and the Newton step's Inf x 0 is NaN): callers clamp their argument first.
template <int K>
DNNB_AVX512_INLINE Vecs<K> reciprocal(const Vecs<K>& d) {
  Vecs<K> r;
  DNNB_EACH {
    const __m512 r0 = _mm512_rcp14_ps(d.v[k]);
    r.v[k] = _mm512_fmadd_ps(_mm512_fnmadd_ps(d.v[k], r0, _mm512_set1_ps(1.0f)), r0, r0);
  }
  return r;
}

template <int K>
struct Masks {
  __mmask16 m[K];
};
template <int K>  // x < 0 (false for NaN)
DNNB_AVX512_INLINE Masks<K> is_negative(const Vecs<K>& x) {
  Masks<K> r;
  DNNB_EACH r.m[k] = _mm512_cmp_ps_mask(x.v[k], _mm512_setzero_ps(), _CMP_LT_OQ);
  return r;
}
template <int K>  // m ? a : b, per lane
DNNB_AVX512_INLINE Vecs<K> select(const Masks<K>& m, const Vecs<K>& a, const Vecs<K>& b) {
  Vecs<K> r;
  DNNB_EACH r.v[k] = _mm512_mask_mov_ps(b.v[k], m.m[k], a.v[k]);
  return r;
}

// ---- e^x ------------------------------------------------------------------------------------

// e^x for x already clamped to [-104, 89] (or NaN): x = n ln2 + r with |r| <= ln2/2, n
// rounded by adding and subtracting 1.5 * 2^23 (an FMA and a subtraction: two cheap uops,
// where VRNDSCALEPS is two uops on port 0 of Intel cores); 2^n applied by VSCALEFPS, which
// rounds once and produces subnormals and Inf correctly.
// full: two-constant reduction (exact enough with FMA), e^r = 1 + r + r^2 Q(r), Q of degree 4
//   fitted minimax in relative error on [-ln2/2, ln2/2] (3.8e-9 with the f32 coefficients).
// half: one-constant reduction (f32 ln2 is off by 1.9e-9: r off by <= 2.5e-7 at |n| = 128),
//   e^r = 1 + r P(r), P of degree 3 (2.9e-6): 3 uops fewer.
// half's P, constant term first.
inline constexpr float kExpHalfP[4] = {9.999668002e-01f, 5.000301600e-01f, 1.678749174e-01f, 4.151381180e-02f};
inline constexpr float kLn2F = 0.693147182464599609375f;  // ln 2 rounded to f32
inline constexpr float kLog2eF = 1.44269504088896341f;
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> exp_clamped(const Vecs<K>& x) {
  const Vecs<K> shifter = splat<K>(12582912.0f);  // 1.5 * 2^23: rounds to an integer
  const Vecs<K> n = sub(fmadd(x, splat<K>(kLog2eF), shifter), shifter);
  Vecs<K> p;
  if constexpr (A == Accuracy::full) {
    Vecs<K> r = fnmadd(n, splat<K>(0.693145751953125f), x);  // ln2 high part
    r = fnmadd(n, splat<K>(1.42860682030941723e-6f), r);     // ln2 - high
    p = fmadd(splat<K>(1.381461276e-03f), r, splat<K>(8.368710056e-03f));
    p = fmadd(p, r, splat<K>(4.166838899e-02f));
    p = fmadd(p, r, splat<K>(1.666652113e-01f));
    p = fmadd(p, r, splat<K>(4.999999404e-01f));
    p = fmadd(p, r, splat<K>(1.0f));
    p = fmadd(p, r, splat<K>(1.0f));
  } else {
    const Vecs<K> r = fnmadd(n, splat<K>(kLn2F), x);
    p = fmadd(splat<K>(kExpHalfP[3]), r, splat<K>(kExpHalfP[2]));
    p = fmadd(p, r, splat<K>(kExpHalfP[1]));
    p = fmadd(p, r, splat<K>(kExpHalfP[0]));
    p = fmadd(p, r, splat<K>(1.0f));
  }
  return scalef(p, n);
}

// e^{-s/2} for s = x^2 in [0, 400] (or NaN; -s/2 >= -200 needs no clamp, see exp_clamped),
// 16-bit tiers only: exp_clamped<half>(-s/2) bit for bit, without the multiply by -1/2 (1 uop
// fewer per vector). n comes from s with -log2e/2 exactly as from -s/2 with log2e; r' =
// s + n (2 ln2) is exactly -2r (scaling by a power of two commutes with rounding); and with
// P's coefficients scaled by (-1/2)^(k+1), every Horner step is exp_clamped's scaled by a
// power of two, so 1 + r P(r) comes out identical. (If s is subnormal, -s/2 would have
// rounded; both forms give 1 then.)
template <int K>
DNNB_AVX512_INLINE Vecs<K> exp_minus_half(const Vecs<K>& s) {
  const Vecs<K> shifter = splat<K>(12582912.0f);
  const Vecs<K> n = sub(fmadd(s, splat<K>(-0.5f * kLog2eF), shifter), shifter);
  const Vecs<K> r2 = fmadd(n, splat<K>(2.0f * kLn2F), s);  // -2r
  Vecs<K> p = fmadd(splat<K>(kExpHalfP[3] / 16), r2, splat<K>(-kExpHalfP[2] / 8));
  p = fmadd(p, r2, splat<K>(kExpHalfP[1] / 4));
  p = fmadd(p, r2, splat<K>(-kExpHalfP[0] / 2));
  p = fmadd(p, r2, splat<K>(1.0f));
  return scalef(p, n);
}

template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> exp_v(const Vecs<K>& x) {
  return exp_clamped<A>(clamp_keep_nan(x, -104.0f, 89.0f));  // beyond: 0 and Inf after scaling
}
// exp_v for arguments known to be <= 0 (z - max in softmax and cross-entropy, -x^2/2) or >= 0
// (2|x| in tanh), or NaN: the clamp on the other side never acts, so it is left out (one uop
// per vector less, the same results).
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> exp_nonpositive(const Vecs<K>& x) {
  return exp_clamped<A>(max_keep_nan(-104.0f, x));
}
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> exp_nonnegative(const Vecs<K>& x) {
  return exp_clamped<A>(min_keep_nan(89.0f, x));
}

// ---- sigmoid ------------------------------------------------------------------------------

// 1/(1+e^-x) without overflow or cancellation: with e = e^-|x|, it is 1/(1+e) for x >= 0
// and e/(1+e) for x < 0 (so tiny results stay accurate instead of flushing to 0).
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> sigmoid_v(const Vecs<K>& x) {
  const Vecs<K> e = exp_clamped<A>(max_keep_nan(-104.0f, neg_abs(x)));
  const Vecs<K> one = splat<K>(1.0f);
  const Masks<K> negative = is_negative(x);
  if constexpr (A == Accuracy::full) return div(select(negative, e, one), add(one, e));
  const Vecs<K> r = reciprocal(add(one, e));
  Vecs<K> y;
  DNNB_EACH y.v[k] = _mm512_mask_mul_ps(r.v[k], negative.m[k], r.v[k], e.v[k]);
  return y;
}

// ---- tanh ---------------------------------------------------------------------------------

// full: |x| < 0.625: x + x^3 P(x^2) (P fitted on x in [0, 0.625], relative error of P
//   4.8e-9); otherwise 1 - 2/(e^{2|x|} + 1), which has no cancellation there (tanh >= 0.55).
// half: one rational function, x P(x^2) / Q(x^2) with P of degree 2 and Q of degree 3
//   (Q(0) = 1), fitted on [0, 5] in relative error (2.2e-6 with the f32 coefficients), x
//   clamped to [-5, 5]: tanh(5) = 1 - 9.1e-5 already rounds to 1 in f16 and bf16. Odd in x,
//   so signs, -0 and NaN need no handling: 13 uops instead of both branches and a blend.
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> tanh_v(const Vecs<K>& x) {
  if constexpr (A == Accuracy::half) {
    const Vecs<K> xc = clamp_keep_nan(x, -5.0f, 5.0f);
    const Vecs<K> s = mul(xc, xc);
    Vecs<K> p = fmadd(splat<K>(1.637113863e-03f), s, splat<K>(1.166178137e-01f));
    p = fmadd(p, s, splat<K>(9.999979734e-01f));
    Vecs<K> q = fmadd(splat<K>(6.446176849e-05f), s, splat<K>(1.830384322e-02f));
    q = fmadd(q, s, splat<K>(4.499348998e-01f));
    q = fmadd(q, s, splat<K>(1.0f));
    return mul(mul(xc, p), reciprocal(q));
  } else {
    const Vecs<K> a = abs(x);
    const Vecs<K> s = mul(a, a);
    Vecs<K> p = fmadd(splat<K>(2.292823174e-03f), s, splat<K>(-8.344022348e-03f));
    p = fmadd(p, s, splat<K>(2.176894505e-02f));
    p = fmadd(p, s, splat<K>(-5.395926329e-02f));
    p = fmadd(p, s, splat<K>(1.333330358e-01f));
    p = fmadd(p, s, splat<K>(-3.333333317e-01f));
    const Vecs<K> small = fmadd(mul(a, s), p, a);
    const Vecs<K> e = exp_nonnegative<A>(add(a, a));
    const Vecs<K> large = sub(splat<K>(1.0f), div(splat<K>(2.0f), add(e, splat<K>(1.0f))));
    Masks<K> is_small;
    DNNB_EACH is_small.m[k] = _mm512_cmp_ps_mask(a.v[k], _mm512_set1_ps(0.625f), _CMP_LT_OQ);
    return copy_sign(select(is_small, small, large), x);  // also keeps -0 and NaN as they are
  }
}

// ---- Phi (GELU) ---------------------------------------------------------------------------

// Phi(x) = P(N(0,1) <= x) = erfc(-x/sqrt2)/2, accurate in relative terms on both tails, in
// one branch-free formula: with z = |x|/sqrt2, erfc(z)/2 = e^{-z^2} h(t), t = 1/(1 + z/2),
// h(z) = erfc(z) e^{z^2} / 2 fitted as a polynomial in t; Phi is erfc/2 for x < 0 and
// 1 - erfc/2 (>= 1/2, no cancellation) for x >= 0. |x| is clamped to 20 (Phi(-20) = 2.8e-89
// underflows f32 to 0).
// full: h of degree 9 for z in [0, 10.1] (relative error 6.1e-8 with the f32 coefficients);
//   z^2 = x^2/2 is split exactly with an FMA so that e^{-z^2} does not inherit the
//   2z^2-times amplified rounding error of z^2.
// half: h of degree 7 for z in [0, 14.2] (8.0e-7), t by the Newton-refined reciprocal, no
//   split (the rounding of x^2 costs at most 6e-8 x^2/2 relative, 6e-6 at x = 14, where only
//   bf16 still has nonzero results); 12 uops fewer.
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> normal_cdf_v(const Vecs<K>& x) {
  const Vecs<K> a = min_keep_nan(20.0f, abs(x));
  const Vecs<K> x2 = mul(a, a);
  Vecs<K> half_erfc;
  if constexpr (A == Accuracy::half) {
    const Vecs<K> t = reciprocal(fmadd(a, splat<K>(0.353553390593273762f), splat<K>(1.0f)));  // 1 + z/2
    Vecs<K> h = fmadd(splat<K>(4.735838994e-02f), t, splat<K>(-1.906996071e-01f));
    h = fmadd(h, t, splat<K>(2.136523128e-01f));
    h = fmadd(h, t, splat<K>(3.485015593e-03f));
    h = fmadd(h, t, splat<K>(1.478468031e-01f));
    h = fmadd(h, t, splat<K>(1.369578689e-01f));
    h = fmadd(h, t, splat<K>(1.414121836e-01f));
    h = fmadd(h, t, splat<K>(-1.331303520e-05f));
    half_erfc = mul(exp_minus_half(x2), h);
  } else {
    const Vecs<K> z = mul(a, splat<K>(0.707106781186547524f));
    const Vecs<K> t = div(splat<K>(1.0f), fmadd(z, splat<K>(0.5f), splat<K>(1.0f)));
    Vecs<K> h = fmadd(splat<K>(-2.760923281e-02f), t, splat<K>(1.323873103e-01f));
    h = fmadd(h, t, splat<K>(-2.217173278e-01f));
    h = fmadd(h, t, splat<K>(1.118340418e-01f));
    h = fmadd(h, t, splat<K>(7.567844819e-03f));
    h = fmadd(h, t, splat<K>(9.111238271e-02f));
    h = fmadd(h, t, splat<K>(1.247405261e-01f));
    h = fmadd(h, t, splat<K>(1.405799538e-01f));
    h = fmadd(h, t, splat<K>(1.411073208e-01f));
    h = fmadd(h, t, splat<K>(-2.849941438e-06f));
    const Vecs<K> x2_lo = fmsub(a, a, x2);  // x^2 = x2 + x2_lo exactly
    Vecs<K> e = exp_nonpositive<A>(mul(x2, splat<K>(-0.5f)));
    e = fnmadd(mul(e, x2_lo), splat<K>(0.5f), e);  // e^{-lo/2} ~ 1 - lo/2
    half_erfc = mul(e, h);
  }
  // half_erfc for x < 0, 1 - half_erfc otherwise (NaN too): one merge-masked subtract, where
  // a select of the two takes a subtract and a blend (1 uop fewer, the same results).
  Vecs<K> phi;
  DNNB_EACH {
    const __mmask16 not_negative = _mm512_cmp_ps_mask(x.v[k], _mm512_setzero_ps(), _CMP_NLT_UQ);
    phi.v[k] = _mm512_mask_sub_ps(half_erfc.v[k], not_negative, _mm512_set1_ps(1.0f), half_erfc.v[k]);
  }
  return phi;
}

// ---- GELU, tanh approximation ---------------------------------------------------------------

// 0.5 x (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) x (1 + 0.044715 x^2): the sigmoid form
// keeps relative accuracy where 1 + tanh u cancels (x << 0).
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> gelu_tanh_v(const Vecs<K>& x) {
  const Vecs<K> inner = fmadd(mul(x, x), splat<K>(0.044715f), splat<K>(1.0f));
  const Vecs<K> two_u = mul(mul(x, splat<K>(1.59576912160573071f)), inner);
  return mul(x, sigmoid_v<A>(two_u));
}

// ---- Single-vector forms, full accuracy (softmax, cross-entropy, tests) ---------------------

DNNB_AVX512_INLINE __m512 clamp_keep_nan(__m512 x, float lo, float hi) {
  return _mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), x));
}
DNNB_AVX512_INLINE __m512 exp_ps(__m512 x) { return exp_v<Accuracy::full>(Vecs<1>{{x}}).v[0]; }
DNNB_AVX512_INLINE __m512 tanh_ps(__m512 x) { return tanh_v<Accuracy::full>(Vecs<1>{{x}}).v[0]; }
DNNB_AVX512_INLINE __m512 sigmoid_ps(__m512 x) { return sigmoid_v<Accuracy::full>(Vecs<1>{{x}}).v[0]; }
DNNB_AVX512_INLINE __m512 normal_cdf_ps(__m512 x) { return normal_cdf_v<Accuracy::full>(Vecs<1>{{x}}).v[0]; }

#undef DNNB_EACH

}  // namespace dnnb::avx512
