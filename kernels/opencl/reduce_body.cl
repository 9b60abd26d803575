// Row reductions over the last dim (sum, mean, max, norm2), one work-group per row. The op's
// .cl (placed before row_body.cl and this file) defines
//   DNNB_REDUCE_IDENTITY, float dnnb_reduce_map(float x), float dnnb_reduce_combine(float, float),
//   float dnnb_reduce_wg(float partial, local float* scratch), float dnnb_reduce_final(float acc, long n)
// and their chunk forms DNNB_REDUCE_MAPV, DNNB_REDUCE_COMBINEV, DNNB_REDUCE_LANES, DNNB_REDUCE_WG_ROW.
// y is viewed with a trailing unit dim so that its rows line up with x's.
// Two kernels: reduce_chunks (x with unit column stride) and reduce_rows (any layout).

// ---- reduce_chunks ----------------------------------------------------------------------------
// Streams the row in 16-byte chunks, DNNB_REDUCE_DEPTH chunks per work-item per step (4 for f32,
// 8 for f16/bf16: 64 and 128 bytes in flight per work-item), all loads issued before any is
// combined (several loads in flight per work-item hide the memory latency); lanes past the row
// end read as the identity. The loaded chunks combine in a fixed tree, then into the
// running lanes; one two-level work-group reduction per row.
#ifndef DNNB_REDUCE_DEPTH
#define DNNB_REDUCE_DEPTH 4
#endif
#if DNNB_REDUCE_DEPTH != 4 && DNNB_REDUCE_DEPTH != 8
#error "DNNB_REDUCE_DEPTH must be 4 or 8"
#endif
DNNB_ROW_KERNEL void reduce_chunks(const global dnnb_t* x, dnnb_rows xr, global dnnb_t* y, dnnb_rows yr) {
  local float scratch[DNNB_ROW_SCRATCH];
  const int cols = (int)xr.cols;
  const int step = DNNB_ROW_WG * DNNB_VW;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const global dnnb_t* xrow = x + dnnb_row_start(xr, r);
    dnnb_vec acc = (dnnb_vec)(DNNB_REDUCE_IDENTITY);
    for (int c = dnnb_chunk_col(0); c < cols; c += DNNB_REDUCE_DEPTH * step) {
      // c < cols here; the host keeps cols + DNNB_REDUCE_DEPTH * step inside int.
      dnnb_vec v[DNNB_REDUCE_DEPTH];
#if DNNB_ROW_RAW
      // All chunks of the step inside the row: the loads back to back as storage bits, then
      // the conversions (see "raw loads" in row_body.cl); else the bounds-checked path below.
      if (c + (DNNB_REDUCE_DEPTH - 1) * step + DNNB_VW <= cols) {
        dnnb_raw_t raw[DNNB_REDUCE_DEPTH];
#pragma unroll
        for (int j = 0; j < DNNB_REDUCE_DEPTH; ++j) raw[j] = dnnb_raw_full(xrow + c + j * step);
#pragma unroll
        for (int j = 0; j < DNNB_REDUCE_DEPTH; ++j) v[j] = DNNB_REDUCE_MAPV(dnnb_raw_get(raw[j]));
      } else
#endif
      {
#pragma unroll
        for (int j = 0; j < DNNB_REDUCE_DEPTH; ++j)
          v[j] = c + j * step < cols ? DNNB_REDUCE_MAPV(dnnb_row_load(xrow, c + j * step, cols, DNNB_REDUCE_IDENTITY))
                                     : (dnnb_vec)(DNNB_REDUCE_IDENTITY);
      }
#pragma unroll
      for (int width = DNNB_REDUCE_DEPTH / 2; width > 0; width /= 2)
#pragma unroll
        for (int j = 0; j < width; ++j) v[j] = DNNB_REDUCE_COMBINEV(v[j], v[j + width]);
      acc = DNNB_REDUCE_COMBINEV(acc, v[0]);
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
