// The backward of layernorm (centered = 1: x - mean, and db) and rmsnorm (weight_offset 1 for the
// Gemma form): norm_bwd_rows then norm_bwd_columns, launched by norm_bwd.cpp (docs/opencl.md).
// From the forward's saved statistics (mean, rstd: f32, one per row):
//
// norm_bwd_rows: work-group g takes rows [g T, (g + 1) T) one at a time. Each work-item owns the
//   chunks of 4 columns c = (k * local size + lid) * 4 in every row:
//   pass 1: the work-group sums of g = dy (w + offset) and g xhat, xhat = (x - mean) rstd;
//   pass 2: dx = rstd ((g - xhat mean(g xhat)) - mean(g)) (x, dy, w read again), and dy xhat,
//           dy added to the work-group's f32 column sums, which only their owner touches: in
//           local memory with -DDNNB_NB_LOCAL=1 (laid out item-fastest: sum slot
//           (k * 4 + q) * local size + lid), else in the group's row of `parts` in global memory.
//   At the end the group's sums are in parts[g][s][c] (s = 0 for dw, 1 for db).
// norm_bwd_columns: one work-item per column and sum: the groups' sums added in group order,
//   rounded once. No atomics: bitwise reproducible for a given launch shape.

#ifndef DNNB_NB_LOCAL
#define DNNB_NB_LOCAL 0
#endif
#if DNNB_NB_LOCAL
#define DNNB_NB_SPACE local
#define DNNB_NB_SLOT(k, q, c) (((long)(k) * 4 + (q)) * lsize + lid)
#else
#define DNNB_NB_SPACE global
#define DNNB_NB_SLOT(k, q, c) ((c) + (q))
#endif

kernel void norm_bwd_rows(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* w, dnnb_rows wr,
                          const global dnnb_t* dy, dnnb_rows dyr, const global float* mean, dnnb_rows mr,
                          const global float* rstd, dnnb_rows rr, global dnnb_t* dx, dnnb_rows dxr,
                          global float* parts, long rows_per_group, int centered, float weight_offset,
                          local float* scratch, local float* local_sums) {
  const long lid = get_local_id(0);
  const long lsize = get_local_size(0);
  const long cols = xr.cols;
  const long chunks = (cols + lsize * 4 - 1) / (lsize * 4);
  const int n_sums = centered ? 2 : 1;
  global float* part = parts + (long)get_group_id(0) * n_sums * cols;
#if DNNB_NB_LOCAL
  local float* sums = local_sums;
  const long sum_stride = chunks * lsize * 4;
#else
  global float* sums = part;
  const long sum_stride = cols;
#endif
  for (long k = 0; k < chunks; ++k) {
    const long c = (k * lsize + lid) * 4;
    for (int q = 0; q < 4; ++q)
      if (c + q < cols)
        for (int s = 0; s < n_sums; ++s) sums[s * sum_stride + DNNB_NB_SLOT(k, q, c)] = 0.0f;
  }
  const long ws = dnnb_row_start(wr, 0);
  const long r0 = (long)get_group_id(0) * rows_per_group;
  const long r1 = min(xr.rows, r0 + rows_per_group);
  const float inv_cols = 1.0f / (float)cols;
  for (long r = r0; r < r1; ++r) {
    const long xs = dnnb_row_start(xr, r), dys = dnnb_row_start(dyr, r), dxs = dnnb_row_start(dxr, r);
    const float rs = rstd[dnnb_row_start(rr, r)];
    const float m = centered ? mean[dnnb_row_start(mr, r)] : 0.0f;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (long k = 0; k < chunks; ++k) {
      const long c = (k * lsize + lid) * 4;
      if (c >= cols) break;
      // Columns past the row read dy = 0: they add nothing.
      const float4 xhat = (dnnb_load_cols4(x, xs, xr.col_stride, cols, c, 0.0f) - m) * rs;
      const float4 g = dnnb_load_cols4(dy, dys, dyr.col_stride, cols, c, 0.0f) *
                       (dnnb_load_cols4(w, ws, wr.col_stride, cols, c, 0.0f) + weight_offset);
      sum_g += dnnb_sum4(g);
      sum_gx += dnnb_sum4(g * xhat);
    }
    const float mean_g = centered ? dnnb_wg_sum(sum_g, scratch) * inv_cols : 0.0f;
    const float mean_gx = dnnb_wg_sum(sum_gx, scratch) * inv_cols;
    for (long k = 0; k < chunks; ++k) {
      const long c = (k * lsize + lid) * 4;
      if (c >= cols) break;
      const float4 xhat = (dnnb_load_cols4(x, xs, xr.col_stride, cols, c, 0.0f) - m) * rs;
      const float4 d = dnnb_load_cols4(dy, dys, dyr.col_stride, cols, c, 0.0f);
      const float4 g = d * (dnnb_load_cols4(w, ws, wr.col_stride, cols, c, 0.0f) + weight_offset);
      // g enters only as an FMA's addend (the rounded product of pass 1): a one-column row gives
      // g - mean(g) = 0 exactly.
      dnnb_store_cols4(dx, dxs, dxr.col_stride, cols, c, rs * (fma(-xhat, (float4)(mean_gx), g) - mean_g));
      const float dv[4] = {d.x, d.y, d.z, d.w};
      const float hv[4] = {xhat.x, xhat.y, xhat.z, xhat.w};
      for (int q = 0; q < 4; ++q) {
        if (c + q < cols) {
          const long slot = DNNB_NB_SLOT(k, q, c);
          sums[slot] += dv[q] * hv[q];
          if (centered) sums[sum_stride + slot] += dv[q];
        }
      }
    }
  }
#if DNNB_NB_LOCAL
  for (long k = 0; k < chunks; ++k) {
    const long c = (k * lsize + lid) * 4;
    for (int q = 0; q < 4; ++q)
      if (c + q < cols)
        for (int s = 0; s < n_sums; ++s) part[s * cols + c + q] = sums[s * sum_stride + DNNB_NB_SLOT(k, q, c)];
  }
#endif
}

// out_s[c] for s = get_global_id(1): the groups' sums of column c in group order, rounded once.
kernel void norm_bwd_columns(const global float* parts, long groups, long n_sums, long cols, global dnnb_t* dw,
                             long dw_offset, long dw_stride, global dnnb_t* db, long db_offset, long db_stride) {
  const long c = get_global_id(0);
  const long s = get_global_id(1);
  if (c >= cols) return;
  float total = 0.0f;
  for (long g = 0; g < groups; ++g) total += parts[(g * n_sums + s) * cols + c];
  if (s == 0)
    DNNB_STORE(dw, dw_offset + c * dw_stride, total);
  else
    DNNB_STORE(db, db_offset + c * db_stride, total);
}
