// sub: a - b.
inline float dnnb_binary(float a, float b) { return a - b; }
