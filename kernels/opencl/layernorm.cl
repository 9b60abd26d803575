// layernorm over the last dim, one work-group per row:
//   y = (x - mean) / sqrt(var + eps) * w + b   (biased variance from squared deviations about
//   the mean, never sum(x^2) - n mean^2, so large means do not cancel).
// Both kernels sum x - x0, x0 the row's first element, and take mean = x0 + mean(x - x0): the
// differences are exact where values are close (Sterbenz), so a constant row has mean x0 and
// deviations 0 exactly (y = b, as torch gives), and a row of large, nearly equal values keeps its
// small deviations instead of the rounding error of a sum of large values.
// w and b are 1-D views [N] (their RowIndex: offset and col_stride).
// Two kernels: layernorm_cached (row_body.cl: the row in registers, every view with unit
// column stride) and layernorm_rows (any layout and length).

// ---- layernorm_cached -----------------------------------------------------------------------
// One read of x. The mean is one two-level reduction; the squared deviations about it are
// summed from the registers (exact two-pass accuracy, no sum(x^2) - n mean^2 cancellation) in
// a second; then y = (x - mean) * rstd * w + b on the way out. Columns past the row end read as
// x0, so they add 0 to the shifted sum.
DNNB_ROW_KERNEL void layernorm_cached(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* w, dnnb_rows wr,
                                      const global dnnb_t* b, dnnb_rows br, float eps, global dnnb_t* y,
                                      dnnb_rows yr) {
  local float scratch[DNNB_ROW_SCRATCH];
  const int cols = (int)xr.cols;
  const float inv_cols = 1.0f / (float)cols;
  const global dnnb_t* wrow = w + wr.offset;
  const global dnnb_t* brow = b + br.offset;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const global dnnb_t* xrow = x + dnnb_row_start(xr, r);
    global dnnb_t* yrow = y + dnnb_row_start(yr, r);
    const float x0 = DNNB_LOAD(xrow, 0);  // one address for the work-group
    dnnb_cache_t cache[DNNB_ROW_VECS];
    dnnb_raw_t raw[DNNB_ROW_VECS];  // all loads first (row_body.cl "raw loads")
    dnnb_row_fetch(raw, xrow, cols, x0);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      cache[k] = dnnb_cache_of_raw(raw[k]);
      s += dnnb_vsum(dnnb_cache_get(cache[k]) - x0);
    }
    const float mean = x0 + dnnb_row_wg_sum(s, scratch) * inv_cols;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      const int c = dnnb_chunk_col(k);
      const dnnb_vec d = select((dnnb_vec)(0.0f), dnnb_cache_get(cache[k]) - mean, dnnb_row_inside(c, cols));
      q += dnnb_vsum(d * d);
    }
    const float rstd = 1.0f / sqrt(dnnb_row_wg_sum(q, scratch) * inv_cols + eps);
#if DNNB_ROW_EARLY
    // w's and b's chunks a group at a time, all of a group's loads before its first use
    // (row_body.cl "early loads"); 4 chunks of each: the registers of rmsnorm's 8 of w.
#define DNNB_EARLY_GROUP (DNNB_ROW_VECS < 4 ? DNNB_ROW_VECS : 4)
#pragma unroll
    for (int k0 = 0; k0 < DNNB_ROW_VECS; k0 += DNNB_EARLY_GROUP) {
      dnnb_raw_t wraw[DNNB_EARLY_GROUP], braw[DNNB_EARLY_GROUP];
      dnnb_row_fetch_part(wraw, wrow, cols, 0.0f, k0, DNNB_EARLY_GROUP);
      dnnb_row_fetch_part(braw, brow, cols, 0.0f, k0, DNNB_EARLY_GROUP);
#pragma unroll
      for (int j = 0; j < DNNB_EARLY_GROUP; ++j) {
        const int c = dnnb_chunk_col(k0 + j);
        if (dnnb_in_row(c, cols))
          dnnb_row_store(yrow, c, cols,
                         (dnnb_cache_get(cache[k0 + j]) - mean) * rstd * dnnb_raw_get(wraw[j]) + dnnb_raw_get(braw[j]));
      }
    }
#else
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      const int c = dnnb_chunk_col(k);
      if (dnnb_in_row(c, cols)) {
        const dnnb_vec vw = dnnb_row_load(wrow, c, cols, 0.0f);
        const dnnb_vec vb = dnnb_row_load(brow, c, cols, 0.0f);
        dnnb_row_store(yrow, c, cols, (dnnb_cache_get(cache[k]) - mean) * rstd * vw + vb);
      }
    }
#endif
  }
}

// ---- layernorm_rows -------------------------------------------------------------------------
// x - x0 throughout (columns past the row end read as x0: 0 once shifted); the mean of the
// shifted values is added back only as a difference of shifted values.
kernel void layernorm_rows(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* w, dnnb_rows wr,
                           const global dnnb_t* b, dnnb_rows br, float eps, global dnnb_t* y, dnnb_rows yr,
                           local float* scratch) {
  const long lid = get_local_id(0);
  const long lsize = get_local_size(0);
  const long cols = xr.cols;
  const float inv_cols = 1.0f / (float)cols;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    const long ys = dnnb_row_start(yr, r);
    const float x0 = DNNB_LOAD(x, xs);
    if (dnnb_row_fits_cache(cols)) {
      // One read of x into registers. Each work-item takes the mean and the squared
      // deviations of its own values (two passes over registers), and one tree merges the
      // (count, mean, M2) triples: exact two-pass accuracy with a single reduction.
      float4 cache[DNNB_CACHE_VECS];
      float s = 0.0f;
      float count = 0.0f;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        cache[k] = c < cols ? dnnb_load_cols4(x, xs, xr.col_stride, cols, c, x0) - x0 : (float4)(0.0f);
        s += dnnb_sum4(cache[k]);
        count += c < cols ? (float)min(cols - c, 4L) : 0.0f;
      }
      const float mean_own = count > 0.0f ? s / count : 0.0f;
      float q = 0.0f;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        const float4 d = (cache[k] - mean_own) * dnnb_valid4(c, cols);
        q += dnnb_sum4(d * d);
      }
      float mean;  // of x - x0
      const float var = dnnb_wg_moments(count, mean_own, q, scratch, &mean) * inv_cols;
      const float rstd = 1.0f / sqrt(var + eps);
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        if (c < cols) {
          const float4 vw = dnnb_load_cols4(w, wr.offset, wr.col_stride, cols, c, 0.0f);
          const float4 vb = dnnb_load_cols4(b, br.offset, br.col_stride, cols, c, 0.0f);
          dnnb_store_cols4(y, ys, yr.col_stride, cols, c, (cache[k] - mean) * rstd * vw + vb);
        }
      }
    } else {
      const long step = lsize * 4;
      float s = 0.0f;
      for (long c = lid * 4; c < cols; c += step)
        s += dnnb_sum4(dnnb_load_cols4(x, xs, xr.col_stride, cols, c, x0) - x0);
      const float mean = dnnb_wg_sum(s, scratch) * inv_cols;  // of x - x0
      float q = 0.0f;
      for (long c = lid * 4; c < cols; c += step) {
        const float4 d = (dnnb_load_cols4(x, xs, xr.col_stride, cols, c, x0) - x0 - mean) * dnnb_valid4(c, cols);
        q += dnnb_sum4(d * d);
      }
      const float var = dnnb_wg_sum(q, scratch) * inv_cols;
      const float rstd = 1.0f / sqrt(var + eps);
      for (long c = lid * 4; c < cols; c += step) {
        const float4 vx = dnnb_load_cols4(x, xs, xr.col_stride, cols, c, x0) - x0;
        const float4 vw = dnnb_load_cols4(w, wr.offset, wr.col_stride, cols, c, 0.0f);
        const float4 vb = dnnb_load_cols4(b, br.offset, br.col_stride, cols, c, 0.0f);
        dnnb_store_cols4(y, ys, yr.col_stride, cols, c, (vx - mean) * rstd * vw + vb);
      }
    }
  }
}
