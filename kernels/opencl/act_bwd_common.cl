// What gelu_bwd.cl and silu_bwd.cl share, placed ahead of each (the host joins the sources).
// s = sigmoid(z) and 1 - s, neither cancelling: with e = e^-|z|, s = 1/(1+e) for z >= 0 and
// e/(1+e) for z < 0, 1 - s the other one. NaN z gives NaN in both.
inline void dnnb_sigmoid_pair(float z, float* s, float* one_minus_s) {
  const float e = exp(-fabs(z));
  const float r = 1.0f / (1.0f + e);
  const float er = e * r;
  *s = z < 0.0f ? er : r;
  *one_minus_s = z < 0.0f ? r : er;
}
