// sum over the last dim.
#define DNNB_REDUCE_IDENTITY 0.0f
inline float dnnb_reduce_map(float x) { return x; }
inline float dnnb_reduce_combine(float a, float b) { return a + b; }
inline float dnnb_reduce_wg(float v, local float* scratch) { return dnnb_wg_sum(v, scratch); }
inline float dnnb_reduce_final(float acc, long n) { return acc; }
