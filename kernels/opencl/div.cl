// div: a / b. The host builds every program with -cl-fp32-correctly-rounded-divide-sqrt where
// the device supports it, so the quotient is correctly rounded (OpenCL allows 2.5 ulp otherwise).
inline float dnnb_binary(float a, float b) { return a / b; }
// The same on whole chunks (binary_tile): lane-wise.
#define DNNB_BINARY_V(a, b) ((a) / (b))
