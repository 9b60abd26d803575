// gelu (exact, approximate='none'): 0.5 x (1 + erf(x / sqrt 2)).
inline float dnnb_unary(float x) { return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F)); }
