// norm2 over the last dim: sqrt(sum x^2), squares summed in f32 (inputs of the suite are far
// from f32 overflow; torch's f32 vector norm does the same).
#define DNNB_REDUCE_IDENTITY 0.0f
inline float dnnb_reduce_map(float x) { return x * x; }
inline float dnnb_reduce_combine(float a, float b) { return a + b; }
inline float dnnb_reduce_wg(float v, local float* scratch) { return dnnb_wg_sum(v, scratch); }
inline float dnnb_reduce_final(float acc, long n) { return sqrt(acc); }
// The same on whole chunks (reduce_chunks in reduce_body.cl): lane-wise map and combine,
// then across the lanes of a chunk, then across the work-group.
#define DNNB_REDUCE_MAPV(v) ((v) * (v))
#define DNNB_REDUCE_COMBINEV(a, b) ((a) + (b))
#define DNNB_REDUCE_LANES dnnb_vsum
#define DNNB_REDUCE_WG_ROW dnnb_row_wg_sum
