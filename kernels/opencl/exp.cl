// exp: the OpenCL built-in.
inline float dnnb_unary(float x) { return exp(x); }
