// The gate of geglu and geglu_bwd: g = gelu_tanh, in its sigmoid form. With k = sqrt(2/pi),
// c = 0.044715, u = k (a + c a^3) and s = sigmoid(2u) = (1 + tanh u) / 2:
//   g(a) = a s (no 1 + tanh cancellation for a < 0);
//   g'(a) = s + 2 a s (1 - s) k (1 + 3 c a^2) = s (1 + a (1 - s) (2k + 6kc a^2)), using
//   1 - tanh^2 u = 4 s (1 - s) with 1 - s from dnnb_sigmoid_pair (torch's 1 - tanh^2 cancels
//   for |a| beyond ~3); the sum with 1 is one fma.
inline float dnnb_geglu_two_u(float a) { return a * fma(0.07135481627260025f, a * a, 1.5957691216057308f); }
inline float dnnb_gate(float a) {
  float one_minus_s;
  return a * dnnb_sigmoid_pair(dnnb_geglu_two_u(a), &one_minus_s);
}
inline float dnnb_gate_slope(float a, float* value) {
  float one_minus_s;
  const float s = dnnb_sigmoid_pair(dnnb_geglu_two_u(a), &one_minus_s);
  *value = a * s;
  const float w = fma(0.21406444881780076f, a * a, 1.5957691216057308f);
  return s * fma(a * one_minus_s, w, 1.0f);
}
