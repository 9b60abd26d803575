// silu_bwd: dx = dy silu'(x) (binary_body.cl's kernels with a = x, b = dy), f32 math:
// silu'(x) = s (1 + x (1 - s)), s = sigmoid(x) and 1 - s from one exponential
// (dnnb_sigmoid_pair), the inner term one fma (no rounding of x (1 - s) before the add, where it
// cancels at silu's minimum, x = -1.28).
inline float dnnb_binary(float x, float dy) {
  float s, oms;
  dnnb_sigmoid_pair(x, &s, &oms);
  return dy * (s * fma(x, oms, 1.0f));
}
#define DNNB_BINARY_V(a, b) dnnb_binary_lanes(a, b)
