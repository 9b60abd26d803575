// Row statistics for the cross-entropy programs (placed after the prelude): the row max m and
// s = sum exp(x - m) in one read: each work-item keeps a running pair that rescales when its
// max grows, and one work-group tree merges the pairs. Returns s; *m_out gets m.
inline float dnnb_row_logsumexp_stats(const global dnnb_t* x, long xs, long x_cs, long cols, float* m_out,
                                      local float* scratch) {
  float m = -INFINITY;
  float s = 0.0f;
  for (long c = (long)get_local_id(0) * 4; c < cols; c += (long)get_local_size(0) * 4) {
    const float4 v = dnnb_load_cols4(x, xs, x_cs, cols, c, -INFINITY);
    dnnb_softmax_add(v.x, &m, &s);
    dnnb_softmax_add(v.y, &m, &s);
    dnnb_softmax_add(v.z, &m, &s);
    dnnb_softmax_add(v.w, &m, &s);
  }
  return dnnb_wg_softmax_stats(m, s, scratch, m_out);
}
