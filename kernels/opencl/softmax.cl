// softmax over the last dim, one work-group per row:
//   t = softcap > 0 ? softcap * tanh(x / softcap) : x;  z = scale * t + mask
//   y = exp(z - max z) / sum exp(z - max z);  a row whose z are all -inf gives y = 0 (as SDPA).
// The mask is an additive view broadcast to x's shape (has_mask = 0: no mask; `mask` is then
// any valid buffer and never read).

// z for columns c..c+3; columns past the row end are -inf so they add nothing.
inline float4 softmax_z4(const global dnnb_t* x, long xs, long x_cs, const global dnnb_t* mask, long ms,
                         long m_cs, int has_mask, long cols, long c, float scale, float softcap) {
  float4 t = dnnb_load_cols4(x, xs, x_cs, cols, c, 0.0f);
  if (softcap > 0.0f) t = softcap * tanh(t / softcap);
  float4 z = scale * t;
  if (has_mask) z += dnnb_load_cols4(mask, ms, m_cs, cols, c, 0.0f);
  if (c + 4 > cols) {
    if (c >= cols) z.x = -INFINITY;
    if (c + 1 >= cols) z.y = -INFINITY;
    if (c + 2 >= cols) z.z = -INFINITY;
    if (c + 3 >= cols) z.w = -INFINITY;
  }
  return z;
}

kernel void softmax_rows(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* mask, dnnb_rows mr,
                         int has_mask, float scale, float softcap, global dnnb_t* y, dnnb_rows yr,
                         local float* scratch) {
  const long lid = get_local_id(0);
  const long lsize = get_local_size(0);
  const long cols = xr.cols;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    const long ms = has_mask ? dnnb_row_start(mr, r) : 0;
    const long ys = dnnb_row_start(yr, r);
    float m = -INFINITY;
    if (dnnb_row_fits_cache(cols)) {
      // One read of x (and mask): z stays in registers for the max, the sum and the store.
      float4 cache[DNNB_CACHE_VECS];
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        cache[k] = c < cols ? softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask, cols, c,
                                         scale, softcap)
                            : (float4)(-INFINITY);
        m = dnnb_max_nan(m, dnnb_max4_nan(cache[k]));
      }
      m = dnnb_wg_max(m, scratch);
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        cache[k] = exp(cache[k] - m);
        s += dnnb_sum4(cache[k]);
      }
      s = dnnb_wg_sum(s, scratch);
      const int all_masked = m == -INFINITY;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        if (c < cols) dnnb_store_cols4(y, ys, yr.col_stride, cols, c, all_masked ? (float4)(0.0f) : cache[k] / s);
      }
    } else {
      // Rows too long for the registers: three passes (the re-reads mostly hit the cache).
      const long step = lsize * 4;
      for (long c = lid * 4; c < cols; c += step)
        m = dnnb_max_nan(m, dnnb_max4_nan(softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask,
                                                     cols, c, scale, softcap)));
      m = dnnb_wg_max(m, scratch);
      float s = 0.0f;
      for (long c = lid * 4; c < cols; c += step)
        s += dnnb_sum4(exp(softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask, cols, c, scale,
                                      softcap) - m));
      s = dnnb_wg_sum(s, scratch);
      const int all_masked = m == -INFINITY;
      for (long c = lid * 4; c < cols; c += step) {
        float4 p = all_masked ? (float4)(0.0f)
                              : exp(softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask, cols, c,
                                               scale, softcap) - m) / s;
        dnnb_store_cols4(y, ys, yr.col_stride, cols, c, p);
      }
    }
  }
}
