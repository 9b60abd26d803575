// gelu_bwd: dx = dy gelu'(x) (binary_body.cl's kernels with a = x, b = dy), f32 math.
// approximate=none: gelu'(x) = Phi(x) + x phi(x), Phi as erfc(-x/sqrt2)/2 (relative accuracy on
// the negative tail, where 1 + erf cancels), phi = e^{-x^2/2} / sqrt(2 pi).
// approximate=tanh (the host defines DNNB_GELU_TANH ahead of this file):
// gelu'(x) = s (1 + x (1 - s) (2k + 6kc x^2)), s = sigmoid(2k (x + c x^3)) and 1 - s from one
// exponential (dnnb_sigmoid_pair, act_bwd_common.cl), where torch's 1 + tanh
// and 1 - tanh^2 cancel for |x| beyond ~3.
#if defined(DNNB_GELU_TANH)
inline float dnnb_binary(float x, float dy) {
  const float x2 = x * x;
  float s, oms;
  dnnb_sigmoid_pair(x * fma(x2, 0.071354816272600245f, 1.5957691216057308f), &s, &oms);
  return dy * (s * fma(x * oms, fma(x2, 0.21406444881780076f, 1.5957691216057308f), 1.0f));
}
#else
inline float dnnb_binary(float x, float dy) {
  const float cdf = 0.5f * erfc(-x * M_SQRT1_2_F);
  return dy * fma(x * 0.398942280401432678f, exp(-0.5f * x * x), cdf);
}
#endif
#define DNNB_BINARY_V(a, b) dnnb_binary_lanes(a, b)
