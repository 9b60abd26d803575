// The sigmoid both gating ops need, with its complement (swiglu.cl, geglu.cl): with
// e = e^-|x|, s = 1/(1+e) for x >= 0 and e/(1+e) for x < 0, and 1 - s the other one, so neither
// cancels (silu' and gelu_tanh' take 1 - s where s is near 1). One exp and one division.
inline float dnnb_sigmoid_pair(float x, float* one_minus_s) {
  const float e = exp(-fabs(x));
  const float r = 1.0f / (1.0f + e);
  const float er = e * r;
  *one_minus_s = x < 0.0f ? r : er;
  return x < 0.0f ? er : r;
}
