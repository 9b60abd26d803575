// Row reductions over the last dim (sum, mean, max, norm2), one work-group per row. The op's
// .cl (placed before this file) defines
//   DNNB_REDUCE_IDENTITY, float dnnb_reduce_map(float x), float dnnb_reduce_combine(float, float),
//   float dnnb_reduce_wg(float partial, local float* scratch), float dnnb_reduce_final(float acc, long n)
// y is viewed with a trailing unit dim so that its rows line up with x's.
kernel void reduce_rows(const global dnnb_t* x, dnnb_rows xr, global dnnb_t* y, dnnb_rows yr,
                        local float* scratch) {
  const long lid = get_local_id(0);
  const long step = (long)get_local_size(0) * 4;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    float acc = DNNB_REDUCE_IDENTITY;
    for (long c = lid * 4; c < xr.cols; c += step) {
      if (xr.col_stride == 1 && c + 4 <= xr.cols) {
        const float4 v = DNNB_LOAD4(x, xs + c);
        acc = dnnb_reduce_combine(acc, dnnb_reduce_combine(
                  dnnb_reduce_combine(dnnb_reduce_map(v.x), dnnb_reduce_map(v.y)),
                  dnnb_reduce_combine(dnnb_reduce_map(v.z), dnnb_reduce_map(v.w))));
      } else {
        for (long k = c; k < c + 4 && k < xr.cols; ++k)
          acc = dnnb_reduce_combine(acc, dnnb_reduce_map(DNNB_LOAD(x, xs + k * xr.col_stride)));
      }
    }
    acc = dnnb_reduce_wg(acc, scratch);
    if (lid == 0) DNNB_STORE(y, dnnb_row_start(yr, r), dnnb_reduce_final(acc, xr.cols));
  }
}
