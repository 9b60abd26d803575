// The slopes f'(x) of the activations, as vector functions of the elementwise driver's Vecs
// (elementwise.h), in f32 at accuracy tier A (avx512_math.h): what gelu_bwd and silu_bwd
// multiply dy by. Each avoids the cancellations of torch's written form where |x| is large.
#pragma once
#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/glu_bwd.h"

namespace dnnb::avx512 {

// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x), with s and 1 - s from one exponential
// (sigmoid_pair) and the inner term one FMA: no rounding of x (1 - s) before the add, where it
// cancels at silu's minimum (x = -1.28).
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> silu_slope(const Vecs<K>& x) {
  Vecs<K> s, one_minus_s;
  sigmoid_pair<A>(x, s, one_minus_s);
  return mul(s, fmadd(x, one_minus_s, splat<K>(1.0f)));
}

// gelu_tanh'(x): with k = sqrt(2/pi), c = 0.044715, u = k (x + c x^3) and s = sigmoid(2u) =
// (1 + tanh u) / 2 (so 1 - tanh^2 u = 4 s (1 - s)):
//   gelu_tanh'(x) = s (1 + x (1 - s) (2k + 6kc x^2)),
// s and 1 - s from one exponential, where torch's 1 + tanh and 1 - tanh^2 cancel for |x| beyond
// ~3 (the form of geglu_bwd's gate).
inline constexpr float kGeluTwoK = 1.5957691216057308f;      // 2 sqrt(2/pi)
inline constexpr float kGeluSixKC = 0.21406444881780076f;    // 6 sqrt(2/pi) 0.044715
inline constexpr float kGeluTwoKC = 0.071354816272600245f;   // 2 sqrt(2/pi) 0.044715
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> gelu_tanh_slope(const Vecs<K>& x) {
  const Vecs<K> x2 = mul(x, x);
  const Vecs<K> two_u = mul(x, fmadd(x2, splat<K>(kGeluTwoKC), splat<K>(kGeluTwoK)));
  Vecs<K> s, one_minus_s;
  sigmoid_pair<A>(two_u, s, one_minus_s);
  const Vecs<K> w = fmadd(x2, splat<K>(kGeluSixKC), splat<K>(kGeluTwoK));
  return mul(s, fmadd(mul(x, one_minus_s), w, splat<K>(1.0f)));
}

// gelu'(x) = Phi(x) + x phi(x), phi(x) = e^{-x^2/2} / sqrt(2 pi): Phi from normal_cdf_v (relative
// accuracy on both tails), the density's exponent clamped at -104 (e^-104 is below every
// normal f32 result of x phi). full: x^2 split exactly with an FMA (x^2 = x2 + lo) so that
// e^{-x^2/2} does not inherit x^2/2 times the rounding of x^2 (as normal_cdf_v does);
// half: e^{-x^2/2} from the rounded x^2 (6e-8 x^2/2 relative, inside half an f16/bf16 ulp
// wherever a result is normal). The sum cancels only at the slope's zero (x = -0.75), to an
// absolute error of a few eps.
template <Accuracy A, int K>
DNNB_AVX512_INLINE Vecs<K> gelu_slope(const Vecs<K>& x) {
  constexpr float kInvSqrt2Pi = 0.398942280401432678f;
  const Vecs<K> x2 = mul(x, x);
  Vecs<K> e = exp_nonpositive<A>(mul(x2, splat<K>(-0.5f)));
  if constexpr (A == Accuracy::full) {
    const Vecs<K> lo = fmsub(x, x, x2);
    e = fnmadd(mul(e, lo), splat<K>(0.5f), e);  // e^{-lo/2} ~ 1 - lo/2
  }
  return fmadd(mul(x, splat<K>(kInvSqrt2Pi)), e, normal_cdf_v<A>(x));
}

}  // namespace dnnb::avx512
