// cross_entropy (mean reduction, ignore_index): two kernels.
//   ce_rows:   one work-group per row: partial[2r] = logsumexp(row) - row[target], partial[2r+1]
//              = 1 for a kept row; both 0 for an ignored row. A target outside [0, C) gives NaN.
//   ce_finish: one work-group: loss = sum of losses / number of kept rows (0/0 = NaN when every
//              row is ignored, as torch). Fixed order, so the result is deterministic.
//   ce_rows_cached: ce_rows for rows that fit the register cache of row_body.cl (unit column
//              stride): all of x's loads first, then the row statistics of logsumexp_body.cl (two
//              cheap reductions and one exp per element, or, with DNNB_ROW_ONE, one reduction over
//              per-item pairs) instead of the running pairs, whose per-element max test and
//              rescale cost more than the memory read.
DNNB_ROW_KERNEL void ce_rows_cached(const global dnnb_t* logits, dnnb_rows lr, const global long* target,
                                    long t_offset, long t_stride, long ignore_index, global float* partial) {
  local float scratch[DNNB_LSE_SCRATCH];
  const int cols = (int)lr.cols;
  for (long r = get_group_id(0); r < lr.rows; r += get_num_groups(0)) {
    const long t = target[t_offset + r * t_stride];
    const global dnnb_t* row = logits + dnnb_row_start(lr, r);
    dnnb_cache_t cache[DNNB_ROW_VECS];
    float m;
    const float s_own = dnnb_row_logsumexp_cached(row, cols, cache, &m, scratch);
    // Only item 0 writes, so only it needs the row's statistics.
    const dnnb_lse_t st = dnnb_lse_sum_first(m, s_own, scratch);
    if (get_local_id(0) == 0) {
      if (t == ignore_index) {
        partial[2 * r] = 0.0f;
        partial[2 * r + 1] = 0.0f;
      } else {
        const float xt = (t >= 0 && t < cols) ? DNNB_LOAD(row, t) : NAN;
        // s carries dnnb_row_exp's 2^DNNB_EXP16_BIAS (1 outside the 16-bit fast-exp plans);
        // the row max's own term is ~2^bias, so s * 2^-bias is normal and the unscaling exact.
        partial[2 * r] = log(st.s * DNNB_EXP16_UNBIAS) + (st.m - xt);
        partial[2 * r + 1] = 1.0f;
      }
    }
  }
}

kernel void ce_rows(const global dnnb_t* logits, dnnb_rows lr, const global long* target, long t_offset,
                    long t_stride, long ignore_index, global float* partial, local float* scratch) {
  for (long r = get_group_id(0); r < lr.rows; r += get_num_groups(0)) {
    const long t = target[t_offset + r * t_stride];
    const long ls = dnnb_row_start(lr, r);
    // Ignored rows run the same barriers as kept ones (see cross_entropy_bwd.cl) and then
    // record nothing.
    float m;
    const float s = dnnb_row_logsumexp_stats(logits, ls, lr.col_stride, lr.cols, &m, scratch);
    if (get_local_id(0) == 0) {
      if (t == ignore_index) {
        partial[2 * r] = 0.0f;
        partial[2 * r + 1] = 0.0f;
      } else {
        const float xt = (t >= 0 && t < lr.cols) ? DNNB_LOAD(logits, ls + t * lr.col_stride) : NAN;
        partial[2 * r] = log(s) + (m - xt);
        partial[2 * r + 1] = 1.0f;
      }
    }
  }
}

kernel void ce_finish(const global float* partial, long rows, global dnnb_t* loss, long loss_offset,
                      local float* scratch) {
  float sum = 0.0f;
  float kept = 0.0f;
  for (long r = get_local_id(0); r < rows; r += get_local_size(0)) {
    sum += partial[2 * r];
    kept += partial[2 * r + 1];
  }
  sum = dnnb_wg_sum(sum, scratch);
  kept = dnnb_wg_sum(kept, scratch);
  if (get_local_id(0) == 0) DNNB_STORE(loss, loss_offset, sum / kept);
}
