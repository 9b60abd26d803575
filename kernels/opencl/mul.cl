// mul: a * b.
inline float dnnb_binary(float a, float b) { return a * b; }
// The same on whole chunks (binary_tile): lane-wise.
#define DNNB_BINARY_V(a, b) ((a) * (b))
