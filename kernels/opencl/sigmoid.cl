// sigmoid: 1 / (1 + exp(-x)); exp overflow to inf gives the correct limit 0.
// 16-bit tiers (DNNB_HALF_MATH): dnnb_sigmoid16 (prelude.cl), no correctly rounded division.
#if DNNB_HALF_MATH
inline float dnnb_unary(float x) { return dnnb_sigmoid16(x); }
#else
inline float dnnb_unary(float x) { return 1.0f / (1.0f + exp(-x)); }
#endif
