// dot: y[r] = sum_k a[r, k] b[r, k] over the last dim, f32 accumulation.
// Rows are split into `groups` segments of `seg` columns, one work-group per (segment, row):
// each item accumulates 4-lane products along its columns (consecutive items, consecutive
// addresses), then one tree in local memory. A row of one segment is stored directly; longer
// rows (few rows, large K: torch.dot of millions) store per-segment sums that dot_finish adds
// in a fixed order, so results do not depend on timing.
kernel void dot_rows(const global dnnb_t* a, dnnb_rows ar, const global dnnb_t* b, dnnb_rows br, global uchar* y,
                     dnnb_rows yr, int y_f32, long groups, long seg, global float* partial, local float* scratch) {
  const long g = get_group_id(0);
  const long lid = get_local_id(0);
  const long step = 4 * (long)get_local_size(0);
  const long begin = g * seg;
  const long end = min(begin + seg, ar.cols);
  for (long r = get_group_id(1); r < ar.rows; r += get_num_groups(1)) {
    const long as = dnnb_row_start(ar, r);
    const long bs = dnnb_row_start(br, r);
    float4 acc = (float4)(0.0f);
    for (long c = begin + lid * 4; c < end; c += step)
      acc = fma(dnnb_load_cols4(a, as, ar.col_stride, end, c, 0.0f),
                dnnb_load_cols4(b, bs, br.col_stride, end, c, 0.0f), acc);
    const float s = dnnb_wg_sum(dnnb_sum4(acc), scratch);
    if (lid == 0) {
      if (groups == 1)
        dnnb_store_y(y, dnnb_row_start(yr, r), y_f32, s);
      else
        partial[r * groups + g] = s;
    }
  }
}

// y[r] = the sum of row r's `groups` segment sums (dot_rows), one work-group per row.
kernel void dot_finish(const global float* partial, long groups, long rows, global uchar* y, dnnb_rows yr, int y_f32,
                       local float* scratch) {
  const long lid = get_local_id(0);
  for (long r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    float s = 0.0f;
    for (long i = lid; i < groups; i += get_local_size(0)) s += partial[r * groups + i];
    s = dnnb_wg_sum(s, scratch);
    if (lid == 0) dnnb_store_y(y, dnnb_row_start(yr, r), y_f32, s);
  }
}
