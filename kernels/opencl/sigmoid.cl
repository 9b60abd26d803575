// sigmoid: 1 / (1 + exp(-x)); exp overflow to inf gives the correct limit 0.
inline float dnnb_unary(float x) { return 1.0f / (1.0f + exp(-x)); }
