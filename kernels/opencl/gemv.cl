// gemv: y[b, n] = sum_k w[n, k] x[b, k] for a batch of 1..16 vectors, f32 accumulation.
// Decode-time products are bound by reading w, so w is read once: a work-group of 256 items
// takes 8 rows of w, 32 items per row walking K in 4-element vectors (consecutive items,
// consecutive addresses along K where w has unit stride there), two vectors in flight per item.
// Each w vector meets all B vectors of x (x is small and stays in cache), so the batch costs
// no second read of w. The 32 partial sums of a row are added in local memory in a fixed order
// (deterministic).
#define DNNB_GEMV_WG 256
#define DNNB_GEMV_LANES 32                              // items per row of w
#define DNNB_GEMV_ROWS (DNNB_GEMV_WG / DNNB_GEMV_LANES)  // rows of w per work-group
#define DNNB_GEMV_MAX_BATCH 16

kernel __attribute__((reqd_work_group_size(DNNB_GEMV_WG, 1, 1))) void gemv_rows(
    const global dnnb_t* w, long w_offset, long w_row, long w_col, const global dnnb_t* x, long x_offset,
    long x_row, long x_col, global uchar* y, long y_offset, long y_row, long y_col, int y_f32, long n, long k,
    int batch) {
  local float partial[DNNB_GEMV_MAX_BATCH * DNNB_GEMV_WG];
  const int lid = get_local_id(0);
  const int r = lid / DNNB_GEMV_LANES;
  const int lane = lid % DNNB_GEMV_LANES;
  const long step = 4 * DNNB_GEMV_LANES;
  for (long row0 = (long)get_group_id(0) * DNNB_GEMV_ROWS; row0 < n;
       row0 += (long)get_num_groups(0) * DNNB_GEMV_ROWS) {
    const long row = row0 + r;
    // acc[b] holds four lanes of vector b's sum; the batch loop is unrolled with a uniform
    // guard so the accumulators stay in registers.
    float4 acc[DNNB_GEMV_MAX_BATCH];
#pragma unroll
    for (int b = 0; b < DNNB_GEMV_MAX_BATCH; ++b) acc[b] = (float4)(0.0f);
    if (row < n) {
      const long ws = w_offset + row * w_row;
      for (long c = lane * 4; c < k; c += 2 * step) {
        const float4 w0 = dnnb_load_cols4(w, ws, w_col, k, c, 0.0f);
        const float4 w1 = dnnb_load_cols4(w, ws, w_col, k, c + step, 0.0f);
#pragma unroll
        for (int b = 0; b < DNNB_GEMV_MAX_BATCH; ++b) {
          if (b < batch) {
            const long xs = x_offset + b * x_row;
            acc[b] = fma(w0, dnnb_load_cols4(x, xs, x_col, k, c, 0.0f), acc[b]);
            acc[b] = fma(w1, dnnb_load_cols4(x, xs, x_col, k, c + step, 0.0f), acc[b]);
          }
        }
      }
    }
#pragma unroll
    for (int b = 0; b < DNNB_GEMV_MAX_BATCH; ++b)
      if (b < batch) partial[b * DNNB_GEMV_WG + lid] = dnnb_sum4(acc[b]);
    barrier(CLK_LOCAL_MEM_FENCE);
    // Item (rr, b) adds row rr's 32 partials of vector b.
    if (lid < DNNB_GEMV_ROWS * DNNB_GEMV_MAX_BATCH) {
      const int rr = lid / DNNB_GEMV_MAX_BATCH;
      const int b = lid % DNNB_GEMV_MAX_BATCH;
      const long out_row = row0 + rr;
      if (b < batch && out_row < n) {
        const local float* p = partial + b * DNNB_GEMV_WG + rr * DNNB_GEMV_LANES;
        float s = 0.0f;
        for (int l = 0; l < DNNB_GEMV_LANES; ++l) s += p[l];
        dnnb_store_y(y, y_offset + b * y_row + out_row * y_col, y_f32, s);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
