// cross_entropy_bwd: d(mean loss)/d logits with upstream grad 1:
//   kept row r:    (softmax(row) - onehot(target)) / count,   ignored row: 0,
// where count is the number of kept rows. Two kernels:
//   ce_count:    one work-group counts kept rows into count[0] (as float; exact below 2^24).
//   ce_bwd_rows: one work-group per row.
kernel void ce_count(const global long* target, long t_offset, long t_stride, long rows, long ignore_index,
                     global float* count, local float* scratch) {
  float kept = 0.0f;
  for (long r = get_local_id(0); r < rows; r += get_local_size(0))
    kept += target[t_offset + r * t_stride] != ignore_index ? 1.0f : 0.0f;
  kept = dnnb_wg_sum(kept, scratch);
  if (get_local_id(0) == 0) count[0] = kept;
}

// ce_bwd_rows_cached: ce_bwd_rows for rows that fit the register cache of row_body.cl (unit
// column stride): x is read once (all loads first), its exps stay in registers for the write, or
// with a packed cache x's bits do and the write recomputes them (the statistics: logsumexp_body.cl,
// in two reductions or, with DNNB_ROW_ONE, one).
DNNB_ROW_KERNEL void ce_bwd_rows_cached(const global dnnb_t* logits, dnnb_rows lr, const global long* target,
                                        long t_offset, long t_stride, long ignore_index, const global float* count,
                                        global dnnb_t* dlogits, dnnb_rows dr) {
  local float scratch[DNNB_LSE_SCRATCH];
  const int cols = (int)lr.cols;
  const float inv_count = 1.0f / count[0];
  for (long r = get_group_id(0); r < lr.rows; r += get_num_groups(0)) {
    const long t = target[t_offset + r * t_stride];
    const global dnnb_t* row = logits + dnnb_row_start(lr, r);
    global dnnb_t* drow = dlogits + dnnb_row_start(dr, r);
    // Same control flow for ignored rows as for kept ones (see ce_bwd_rows).
    const int ignored = t == ignore_index;
    const int target_ok = t >= 0 && t < cols;
    const float bad_target = (ignored || target_ok) ? 0.0f : NAN;
    const dnnb_ivec target_col = (dnnb_ivec)(target_ok ? (int)t : -1);
    dnnb_cache_t cache[DNNB_ROW_VECS];
    float m;
    const float s_own = dnnb_row_logsumexp_cached(row, cols, cache, &m, scratch);
    const dnnb_lse_t st = dnnb_lse_sum_all(m, s_own, scratch);
    // The exps are about this item's max with DNNB_ROW_ONE: st.own rescales them (1 otherwise,
    // folded away; logsumexp_body.cl).
    const float inv_s = (1.0f / st.s) * st.own_unbias;
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      const int c = dnnb_chunk_col(k);
      if (dnnb_in_row(c, cols)) {
        const dnnb_vec onehot = select((dnnb_vec)(0.0f), (dnnb_vec)(1.0f), (dnnb_ivec)(c) + DNNB_IOTA == target_col);
        const dnnb_vec g = ignored ? (dnnb_vec)(0.0f) : ((dnnb_row_lse_exp(cache[k], st.item_shift) * st.own) * inv_s - onehot) * inv_count + bad_target;
        dnnb_row_store(drow, c, cols, g);
      }
    }
  }
}

kernel void ce_bwd_rows(const global dnnb_t* logits, dnnb_rows lr, const global long* target, long t_offset,
                        long t_stride, long ignore_index, const global float* count, global dnnb_t* dlogits,
                        dnnb_rows dr, local float* scratch) {
  const long cols = lr.cols;
  const long step = (long)get_local_size(0) * 4;
  const float inv_count = 1.0f / count[0];
  for (long r = get_group_id(0); r < lr.rows; r += get_num_groups(0)) {
    const long t = target[t_offset + r * t_stride];
    const long ls = dnnb_row_start(lr, r);
    const long ds = dnnb_row_start(dr, r);
    // Ignored rows run the same code (and barriers) as kept ones and are scaled to 0: control
    // flow around barriers stays identical for every row, which some implementations
    // (PoCL's work-item loops) need even when the branch would be uniform.
    const int ignored = t == ignore_index;
    float m;
    const float s = dnnb_row_logsumexp_stats(logits, ls, lr.col_stride, cols, &m, scratch);
    // A target outside [0, C) makes the row NaN (torch raises; we cannot).
    const float bad_target = (ignored || (t >= 0 && t < cols)) ? 0.0f : NAN;
    const float scale = ignored ? 0.0f : inv_count;
    const float inv_s = 1.0f / s;
    for (long c = (long)get_local_id(0) * 4; c < cols; c += step) {
      float4 g = (float4)(0.0f);
      if (!ignored) {
        const float4 p = exp(dnnb_load_cols4(logits, ls, lr.col_stride, cols, c, 0.0f) - m) * inv_s;
        const float4 onehot = (float4)(c == t ? 1.0f : 0.0f, c + 1 == t ? 1.0f : 0.0f,
                                       c + 2 == t ? 1.0f : 0.0f, c + 3 == t ? 1.0f : 0.0f);
        g = (p - onehot) * scale + bad_target;
      }
      dnnb_store_cols4(dlogits, ds, dr.col_stride, cols, c, g);
    }
  }
}
