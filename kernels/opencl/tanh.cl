// tanh: the OpenCL built-in (full precision; no native_ or fast-math variants).
inline float dnnb_unary(float x) { return tanh(x); }
