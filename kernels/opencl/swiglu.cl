// The gate of swiglu and swiglu_bwd: g = silu, with s = sigmoid(a):
//   g(a) = a s, written a / (1 + e^-a) (one rounding fewer; -0 for a -> -inf, as silu.cl);
//   g'(a) = s (1 + a (1 - s)), the inner sum one fma (no rounding of a (1 - s) before it
//   cancels near silu's minimum at a = -1.28).
inline float dnnb_gate(float a) { return a / (1.0f + exp(-a)); }
inline float dnnb_gate_slope(float a, float* value) {
  float one_minus_s;
  const float s = dnnb_sigmoid_pair(a, &one_minus_s);
  *value = a * s;
  return s * fma(a, one_minus_s, 1.0f);
}
