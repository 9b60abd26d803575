// rmsnorm over the last dim, one work-group per row:
//   torch form: y = x / sqrt(mean(x^2) + eps) * w;  gemma form (gemma = 1): ... * (1 + w).
// Computed in f32 and rounded once (Gemma's float32 form; see docs/ops-family1.md).
// Two kernels: rmsnorm_cached (row_body.cl: the row in registers, every view with unit column
// stride) and rmsnorm_rows (any layout and length).

// ---- rmsnorm_cached -------------------------------------------------------------------------
// One read of x, one two-level reduction of the squares, y = x * inv_rms * (w [+ 1]) on the
// way out.
DNNB_ROW_KERNEL void rmsnorm_cached(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* w, dnnb_rows wr,
                                    float eps, int gemma, global dnnb_t* y, dnnb_rows yr) {
  local float scratch[DNNB_ROW_SCRATCH];
  const int cols = (int)xr.cols;
  const float weight_bias = gemma ? 1.0f : 0.0f;
  const global dnnb_t* wrow = w + wr.offset;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const global dnnb_t* xrow = x + dnnb_row_start(xr, r);
    global dnnb_t* yrow = y + dnnb_row_start(yr, r);
    dnnb_cache_t cache[DNNB_ROW_VECS];
    dnnb_raw_t raw[DNNB_ROW_VECS];  // all loads first (row_body.cl "raw loads")
    dnnb_row_fetch(raw, xrow, cols, 0.0f);
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      cache[k] = dnnb_cache_of_raw(raw[k]);
      const dnnb_vec v = dnnb_cache_get(cache[k]);
      q += dnnb_vsum(v * v);
    }
    const float inv_rms = 1.0f / sqrt(dnnb_row_wg_sum(q, scratch) / (float)cols + eps);
#if DNNB_ROW_EARLY
    // w's chunks a group at a time, all of a group's loads before its first use (row_body.cl
    // "early loads"): in the loop below each load would wait behind the previous chunk's store.
#define DNNB_EARLY_GROUP (DNNB_ROW_VECS < 8 ? DNNB_ROW_VECS : 8)
#pragma unroll
    for (int k0 = 0; k0 < DNNB_ROW_VECS; k0 += DNNB_EARLY_GROUP) {
      dnnb_raw_t wraw[DNNB_EARLY_GROUP];
      dnnb_row_fetch_part(wraw, wrow, cols, 0.0f, k0, DNNB_EARLY_GROUP);
#pragma unroll
      for (int j = 0; j < DNNB_EARLY_GROUP; ++j) {
        const int c = dnnb_chunk_col(k0 + j);
        if (dnnb_in_row(c, cols))
          dnnb_row_store(yrow, c, cols, dnnb_cache_get(cache[k0 + j]) * inv_rms * (dnnb_raw_get(wraw[j]) + weight_bias));
      }
    }
#else
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      const int c = dnnb_chunk_col(k);
      if (dnnb_in_row(c, cols)) {
        const dnnb_vec vw = dnnb_row_load(wrow, c, cols, 0.0f) + weight_bias;
        dnnb_row_store(yrow, c, cols, dnnb_cache_get(cache[k]) * inv_rms * vw);
      }
    }
#endif
  }
}

// ---- rmsnorm_rows ---------------------------------------------------------------------------
kernel void rmsnorm_rows(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* w, dnnb_rows wr,
                         float eps, int gemma, global dnnb_t* y, dnnb_rows yr, local float* scratch) {
  const long lid = get_local_id(0);
  const long lsize = get_local_size(0);
  const long cols = xr.cols;
  const float weight_bias = gemma ? 1.0f : 0.0f;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    const long ys = dnnb_row_start(yr, r);
    if (dnnb_row_fits_cache(cols)) {
      float4 cache[DNNB_CACHE_VECS];
      float q = 0.0f;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        cache[k] = c < cols ? dnnb_load_cols4(x, xs, xr.col_stride, cols, c, 0.0f) : (float4)(0.0f);
        q += dnnb_sum4(cache[k] * cache[k]);
      }
      const float inv_rms = 1.0f / sqrt(dnnb_wg_sum(q, scratch) / (float)cols + eps);
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        if (c < cols) {
          const float4 vw = dnnb_load_cols4(w, wr.offset, wr.col_stride, cols, c, 0.0f) + weight_bias;
          dnnb_store_cols4(y, ys, yr.col_stride, cols, c, cache[k] * inv_rms * vw);
        }
      }
    } else {
      const long step = lsize * 4;
      float q = 0.0f;
      for (long c = lid * 4; c < cols; c += step) {
        const float4 v = dnnb_load_cols4(x, xs, xr.col_stride, cols, c, 0.0f);
        q += dnnb_sum4(v * v);
      }
      const float inv_rms = 1.0f / sqrt(dnnb_wg_sum(q, scratch) / (float)cols + eps);
      for (long c = lid * 4; c < cols; c += step) {
        const float4 vx = dnnb_load_cols4(x, xs, xr.col_stride, cols, c, 0.0f);
        const float4 vw = dnnb_load_cols4(w, wr.offset, wr.col_stride, cols, c, 0.0f) + weight_bias;
        dnnb_store_cols4(y, ys, yr.col_stride, cols, c, vx * inv_rms * vw);
      }
    }
  }
}
