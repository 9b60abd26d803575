// Row reductions over the last dim (sum, mean, max, norm2), one work-group per row. The op's
// .cl (placed before row_body.cl and this file) defines
//   DNNB_REDUCE_IDENTITY, float dnnb_reduce_map(float x), float dnnb_reduce_combine(float, float),
//   float dnnb_reduce_wg(float partial, local float* scratch), float dnnb_reduce_final(float acc, long n)
// and their chunk forms DNNB_REDUCE_MAPV, DNNB_REDUCE_COMBINEV, DNNB_REDUCE_LANES, DNNB_REDUCE_WG_ROW.
// y is viewed with a trailing unit dim so that its rows line up with x's.
// Two kernels: reduce_chunks (x with unit column stride) and reduce_rows (any layout; also
// the "legacy" variant).

// ---- reduce_chunks ----------------------------------------------------------------------------
// Streams the row in 16-byte chunks, four chunks per work-item per step, all four loads issued
// before any is combined (several loads in flight per work-item hide the memory latency);
// lanes past the row end read as the identity. One two-level work-group reduction per row.
DNNB_ROW_KERNEL void reduce_chunks(const global dnnb_t* x, dnnb_rows xr, global dnnb_t* y, dnnb_rows yr) {
  local float scratch[DNNB_ROW_SCRATCH];
  const int cols = (int)xr.cols;
  const int step = DNNB_ROW_WG * DNNB_VW;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const global dnnb_t* xrow = x + dnnb_row_start(xr, r);
    dnnb_vec acc = (dnnb_vec)(DNNB_REDUCE_IDENTITY);
    for (int c = dnnb_chunk_col(0); c < cols; c += 4 * step) {
      // c < cols here; the host keeps cols + 4 * step inside int.
      const dnnb_vec v0 = dnnb_row_load(xrow, c, cols, DNNB_REDUCE_IDENTITY);
      const dnnb_vec v1 = c + step < cols ? dnnb_row_load(xrow, c + step, cols, DNNB_REDUCE_IDENTITY)
                                          : (dnnb_vec)(DNNB_REDUCE_IDENTITY);
      const dnnb_vec v2 = c + 2 * step < cols ? dnnb_row_load(xrow, c + 2 * step, cols, DNNB_REDUCE_IDENTITY)
                                              : (dnnb_vec)(DNNB_REDUCE_IDENTITY);
      const dnnb_vec v3 = c + 3 * step < cols ? dnnb_row_load(xrow, c + 3 * step, cols, DNNB_REDUCE_IDENTITY)
                                              : (dnnb_vec)(DNNB_REDUCE_IDENTITY);
      const dnnb_vec pair01 = DNNB_REDUCE_COMBINEV(DNNB_REDUCE_MAPV(v0), DNNB_REDUCE_MAPV(v1));
      const dnnb_vec pair23 = DNNB_REDUCE_COMBINEV(DNNB_REDUCE_MAPV(v2), DNNB_REDUCE_MAPV(v3));
      acc = DNNB_REDUCE_COMBINEV(acc, DNNB_REDUCE_COMBINEV(pair01, pair23));
    }
    const float total = DNNB_REDUCE_WG_ROW(DNNB_REDUCE_LANES(acc), scratch);
    if (get_local_id(0) == 0) DNNB_STORE(y, dnnb_row_start(yr, r), dnnb_reduce_final(total, xr.cols));
  }
}

// ---- reduce_rows ------------------------------------------------------------------------------
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
