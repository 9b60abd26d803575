// silu: x * sigmoid(x), written x / (1 + exp(-x)) so large negative x gives -0, not NaN.
// 16-bit tiers (DNNB_HALF_MATH): x * dnnb_sigmoid16(x) (prelude.cl), no correctly rounded
// division; e^x for x < 0 comes from e^-|x|, so bf16 results below x = -88.7 (down to
// -7e-38 at x = -90) are kept instead of the -0 of exp(-x) overflowing.
#if DNNB_HALF_MATH
inline float dnnb_unary(float x) { return x * dnnb_sigmoid16(x); }
#else
inline float dnnb_unary(float x) { return x / (1.0f + exp(-x)); }
#endif
