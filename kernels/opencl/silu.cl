// silu: x * sigmoid(x), written x / (1 + exp(-x)) so large negative x gives -0, not NaN.
inline float dnnb_unary(float x) { return x / (1.0f + exp(-x)); }
