// max over the last dim; NaN propagates as in torch.max.
#define DNNB_REDUCE_IDENTITY (-INFINITY)
inline float dnnb_reduce_map(float x) { return x; }
inline float dnnb_reduce_combine(float a, float b) { return dnnb_max_nan(a, b); }
inline float dnnb_reduce_wg(float v, local float* scratch) { return dnnb_wg_max(v, scratch); }
inline float dnnb_reduce_final(float acc, long n) { return acc; }
