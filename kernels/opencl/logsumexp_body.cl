// Row statistics for the cross-entropy programs (placed after the prelude): the row max m and
// s = sum exp(x - m) in one read, each work-item keeping a running (max, sum) that rescales
// when its max grows; the work-group then merges the pairs. Returns s; *m_out gets m.
inline void dnnb_online_add(float x, float* m, float* s) {
  if (x > *m) {
    *s = *s * exp(*m - x) + 1.0f;  // exp(-inf) = 0 for the first element
    *m = x;
  } else if (x != -INFINITY) {
    *s += exp(x - *m);             // NaN x makes s NaN, as torch's loss is NaN then
  }
}

inline float dnnb_row_logsumexp_stats(const global dnnb_t* x, long xs, long x_cs, long cols, float* m_out,
                                      local float* scratch) {
  float m = -INFINITY;
  float s = 0.0f;
  for (long c = (long)get_local_id(0) * 4; c < cols; c += (long)get_local_size(0) * 4) {
    const float4 v = dnnb_load_cols4(x, xs, x_cs, cols, c, -INFINITY);
    dnnb_online_add(v.x, &m, &s);
    dnnb_online_add(v.y, &m, &s);
    dnnb_online_add(v.z, &m, &s);
    dnnb_online_add(v.w, &m, &s);
  }
  const float row_max = dnnb_wg_max(m, scratch);
  const float scaled = m == -INFINITY ? 0.0f : s * exp(m - row_max);
  *m_out = row_max;
  return dnnb_wg_sum(scaled, scratch);
}
