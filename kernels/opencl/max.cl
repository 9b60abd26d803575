// max over the last dim; NaN propagates as in torch.max.
#define DNNB_REDUCE_IDENTITY (-INFINITY)
inline float dnnb_reduce_map(float x) { return x; }
inline float dnnb_reduce_combine(float a, float b) { return dnnb_max_nan(a, b); }
inline float dnnb_reduce_wg(float v, local float* scratch) { return dnnb_wg_max(v, scratch); }
inline float dnnb_reduce_final(float acc, long n) { return acc; }
// The same on whole chunks (reduce_chunks in reduce_body.cl): lane-wise map and combine,
// then across the lanes of a chunk, then across the work-group.
#define DNNB_REDUCE_MAPV(v) (v)
#define DNNB_REDUCE_COMBINEV(a, b) dnnb_vmax2((a), (b))
#define DNNB_REDUCE_LANES dnnb_vmax
#define DNNB_REDUCE_WG_ROW dnnb_row_wg_max
