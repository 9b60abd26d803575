// gelu (approximate='tanh'): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
#if DNNB_HALF_MATH
// 16-bit tiers: 0.5 (1 + tanh(u)) = sigmoid(2u), so y = x * dnnb_sigmoid16(2u) (prelude.cl):
// one exp and one reciprocal instead of tanh, and no 1 + tanh cancellation for
// x < 0. 2u = x (2k + 2k 0.044715 x^2) is rounded in f32 (relative ~2e-7), which moves
// e^{2u} by |2u| 2e-7: 2e-6 at the bf16 tail (2u ~ -90), far inside half a bf16 ulp.
inline float dnnb_unary(float x) {
  const float v = x * fma(0.07135481627260025f, x * x, 1.5957691216057308f);  // 2u
  return x * dnnb_sigmoid16(v);
}
#else
inline float dnnb_unary(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  const float inner = k * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanh(inner));
}
#endif
