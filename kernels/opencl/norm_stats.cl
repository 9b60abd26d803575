// layernorm_stats and rmsnorm_stats, one work-group per row: the f32 statistics a norm's
// forward saves for its backward, written to f32 views of one value per row (mean and rstd of
// shape [..., 1], addressed by their own dnnb_rows).
// layernorm: the arithmetic of layernorm_rows (layernorm.cl): the sum of x - x0, x0 the row's
// first element, then the squared deviations about the mean in a second read of the row; a
// constant row has mean x0 and variance 0 exactly. rmsnorm: the f32 sum of squares.

kernel void layernorm_stats_rows(const global dnnb_t* x, dnnb_rows xr, float eps, global float* mean, dnnb_rows mr,
                                 global float* rstd, dnnb_rows rr, local float* scratch) {
  const long lid = get_local_id(0);
  const long step = get_local_size(0) * 4;
  const long cols = xr.cols;
  const float inv_cols = 1.0f / (float)cols;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    const float x0 = DNNB_LOAD(x, xs);
    float s = 0.0f;
    for (long c = lid * 4; c < cols; c += step) s += dnnb_sum4(dnnb_load_cols4(x, xs, xr.col_stride, cols, c, x0) - x0);
    const float m = dnnb_wg_sum(s, scratch) * inv_cols;  // of x - x0
    float q = 0.0f;
    for (long c = lid * 4; c < cols; c += step) {
      const float4 d = (dnnb_load_cols4(x, xs, xr.col_stride, cols, c, x0) - x0 - m) * dnnb_valid4(c, cols);
      q += dnnb_sum4(d * d);
    }
    const float var = dnnb_wg_sum(q, scratch) * inv_cols;
    if (lid == 0) {
      mean[dnnb_row_start(mr, r)] = x0 + m;
      rstd[dnnb_row_start(rr, r)] = 1.0f / sqrt(var + eps);
    }
  }
}

kernel void rmsnorm_stats_rows(const global dnnb_t* x, dnnb_rows xr, float eps, global float* rstd, dnnb_rows rr,
                               local float* scratch) {
  const long lid = get_local_id(0);
  const long step = get_local_size(0) * 4;
  const long cols = xr.cols;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    float q = 0.0f;
    for (long c = lid * 4; c < cols; c += step) {
      const float4 v = dnnb_load_cols4(x, xs, xr.col_stride, cols, c, 0.0f);
      q += dnnb_sum4(v * v);
    }
    const float sum_squares = dnnb_wg_sum(q, scratch);
    if (lid == 0) rstd[dnnb_row_start(rr, r)] = 1.0f / sqrt(sum_squares / (float)cols + eps);
  }
}
