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

// The same statistics for the row-cached kernels (row_body.cl): the row is loaded once into
// `cache` (columns past the end as -inf), then a max reduction and a sum of exp(x - max)
// reduction, one exp per element, left in `cache` (the backward pass reuses them through
// dnnb_row_lse_exp). Returns s; *m_out gets m. A row of -inf only gives m = -inf and s = 0
// (exp(-inf - 0) = 0). Packed (DNNB_ROW_PACKED): the cache keeps x's bits and
// dnnb_row_lse_exp recomputes the exp (the forward loss needs none; the backward pays one more).
// The exps are dnnb_row_exp (row_body.cl): in 16-bit fast-exp plans (DNNB_HALF_MATH=2) they and
// s carry the factor 2^DNNB_EXP16_BIAS, which the backward's e / s cancels and the forward
// removes before its log.
// Without row_body.cl (DNNB_ROW_VECS undefined) this part is left out.
#ifdef DNNB_ROW_VECS
// The exp(x - shift) of one cached chunk (times 2^DNNB_EXP16_BIAS), shift = (m == -inf ? 0 : m).
inline dnnb_vec dnnb_row_lse_exp(dnnb_cache_t e, float shift) {
#if DNNB_ROW_PACKED
  return dnnb_row_exp(dnnb_cache_get(e) - shift);
#else
  return e;
#endif
}

// The sum pass and both reductions, once `cache` holds the row and m this work-item's max.
inline float dnnb_row_lse_finish(private dnnb_cache_t* cache, float m, float* m_out, local float* scratch) {
  m = dnnb_row_wg_max(m, scratch);
  const float shift = m == -INFINITY ? 0.0f : m;
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
#if DNNB_ROW_PACKED
    s += dnnb_vsum(dnnb_row_exp(dnnb_cache_get(cache[k]) - shift));
#else
    cache[k] = dnnb_row_exp(cache[k] - shift);
    s += dnnb_vsum(cache[k]);
#endif
  }
  *m_out = m;
  return dnnb_row_wg_sum(s, scratch);
}

#if DNNB_ROW_RAW
// The statistics of a row already fetched as raw chunks (dnnb_row_fetch with fill -inf): the
// early-load kernels issue their other loads between the fetch and this.
inline float dnnb_row_logsumexp_of_raw(const private dnnb_raw_t* raw, private dnnb_cache_t* cache, float* m_out,
                                       local float* scratch) {
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
    cache[k] = dnnb_cache_of_raw(raw[k]);
    m = dnnb_max_nan(m, dnnb_vmax(dnnb_cache_get(cache[k])));
  }
  return dnnb_row_lse_finish(cache, m, m_out, scratch);
}
#endif

inline float dnnb_row_logsumexp_cached(const global dnnb_t* row, int cols, private dnnb_cache_t* cache,
                                       float* m_out, local float* scratch) {
#if DNNB_ROW_RAW
  dnnb_raw_t raw[DNNB_ROW_VECS];  // all loads first (row_body.cl "raw loads")
  dnnb_row_fetch(raw, row, cols, -INFINITY);
  return dnnb_row_logsumexp_of_raw(raw, cache, m_out, scratch);
#else
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
    const int c = dnnb_chunk_col(k);
    cache[k] = c < cols ? dnnb_cache_load(row, c, cols, -INFINITY) : dnnb_cache_splat(-INFINITY);
    m = dnnb_max_nan(m, dnnb_vmax(dnnb_cache_get(cache[k])));
  }
  return dnnb_row_lse_finish(cache, m, m_out, scratch);
#endif
}
#endif
