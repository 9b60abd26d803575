// softmax over the last dim, one work-group per row:
//   t = softcap > 0 ? softcap * tanh(x / softcap) : x;  z = scale * t + mask
//   y = exp(z - max z) / sum exp(z - max z);  a row whose z are all -inf gives y = 0 (as SDPA).
// The mask is an additive view broadcast to x's shape (has_mask = 0: no mask; `mask` is then
// any valid buffer and never read).
// Two kernels: softmax_cached (row_body.cl: rows up to 64 floats per work-item, x and y with unit
// column stride) and softmax_rows (any layout and length).

// ---- softmax_cached -------------------------------------------------------------------------
// The row is read once into registers as z (all of x's loads first: row_body.cl "raw loads"),
// then: row max (one two-level reduction), exp in place, row sum (a second one), one multiply per
// element on the way out. Two cheap reductions with a single exp per element beat merging (max,
// sum) pairs, whose tree needs two exps per step. The exps are dnnb_row_exp (row_body.cl): the
// built-in exp, or in 16-bit fast-exp plans (DNNB_HALF_MATH=2) native_exp2 times
// 2^DNNB_EXP16_BIAS, which y = e / sum cancels. The cache holds z as floats (never packed: z is
// not x) and the statistics come from two reductions (never DNNB_ROW_ONE).
#if DNNB_ROW_PACKED || DNNB_ROW_ONE
#error "softmax_cached caches z as floats and takes two reductions: no DNNB_ROW_PACKED, no DNNB_ROW_ONE"
#endif
// mask_mode: 0 none; 1 a row of the mask with unit column stride (chunk loads); 2 one mask value
// per row (column stride 0, e.g. a [N, 1] mask).
// z of the chunk at column c from its x values t.
inline dnnb_vec softmax_z_of(dnnb_vec t, const global dnnb_t* mrow, int mask_mode, float mask_scalar, int c,
                             int cols, float scale, float softcap) {
  if (softcap > 0.0f) t = softcap * tanh(t / softcap);
  dnnb_vec z = scale * t;
  if (mask_mode == 1) z += dnnb_row_load(mrow, c, cols, 0.0f);
  if (mask_mode == 2) z += mask_scalar;
  return select((dnnb_vec)(-INFINITY), z, dnnb_row_inside(c, cols));
}

// The rest of a row held as z in a float cache, given this item's max m: the row's max and sum
// over the work-group, y = exp(z - max) / sum. A fully masked row (max -inf): exp(-inf - 0) = 0
// everywhere, and y = 0 as SDPA gives.
inline void softmax_finish_cached(private dnnb_vec* cache, float m, global dnnb_t* yrow, int cols,
                                  local float* scratch) {
  m = dnnb_lse_max(m, scratch);
  const float shift = dnnb_lse_shift(m);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
    cache[k] = dnnb_row_exp(cache[k] - shift);
    s += dnnb_vsum(cache[k]);
  }
  const dnnb_lse_t st = dnnb_lse_sum_all(m, s, scratch);
  const float inv_s = dnnb_lse_inv_masked(st) * st.own_unbias;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
    const int c = dnnb_chunk_col(k);
    if (dnnb_in_row(c, cols)) dnnb_row_store(yrow, c, cols, cache[k] * inv_s);
  }
}

#if DNNB_ROW_EARLY
// Early loads (row_body.cl; the f16/bf16 plan): the mask mode is a build option
// (-DDNNB_SOFTMAX_MASK=0|1|2, set by the host for early plans; the mask_mode argument then must
// match it), so a kernel without a mask keeps no registers for one. The mask's chunks (mode 1)
// are fetched as raw bits with x's, its scalar (mode 2) loaded after them; z is computed from
// values already in registers, never from a load inside it.
#ifndef DNNB_SOFTMAX_MASK
#error "softmax early plans need -DDNNB_SOFTMAX_MASK"
#endif
inline dnnb_vec softmax_z_early(dnnb_vec t, dnnb_vec mv, float mask_scalar, int c, int cols, float scale,
                                float softcap) {
  if (softcap > 0.0f) t = softcap * tanh(t / softcap);
  dnnb_vec z = scale * t;
  if (DNNB_SOFTMAX_MASK == 1) z += mv;
  if (DNNB_SOFTMAX_MASK == 2) z += mask_scalar;
  return select((dnnb_vec)(-INFINITY), z, dnnb_row_inside(c, cols));
}

// softmax_cached's row with early loads: the same arithmetic in the same order (bit-identical).
inline void softmax_row_early(const global dnnb_t* xrow, const global dnnb_t* mrow, float scale, float softcap,
                              global dnnb_t* yrow, int cols, local float* scratch) {
  dnnb_raw_t xraw[DNNB_ROW_VECS];
  dnnb_row_fetch(xraw, xrow, cols, 0.0f);
#if DNNB_SOFTMAX_MASK == 1
  dnnb_raw_t mraw[DNNB_ROW_VECS];
  dnnb_row_fetch(mraw, mrow, cols, 0.0f);
#endif
#if DNNB_SOFTMAX_MASK == 2
  const float mask_scalar = DNNB_LOAD(mrow, 0);
#else
  const float mask_scalar = 0.0f;
#endif
  float m = -INFINITY;
  dnnb_vec cache[DNNB_ROW_VECS];
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
#if DNNB_SOFTMAX_MASK == 1
    const dnnb_vec mv = dnnb_raw_get(mraw[k]);
#else
    const dnnb_vec mv = (dnnb_vec)(0.0f);
#endif
    cache[k] = softmax_z_early(dnnb_raw_get(xraw[k]), mv, mask_scalar, dnnb_chunk_col(k), cols, scale, softcap);
    m = dnnb_lse_vmax(m, cache[k]);
  }
  softmax_finish_cached(cache, m, yrow, cols, scratch);
}
#endif

DNNB_ROW_KERNEL void softmax_cached(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* mask, dnnb_rows mr,
                                    int mask_mode, float scale, float softcap, global dnnb_t* y, dnnb_rows yr) {
  local float scratch[DNNB_LSE_SCRATCH];
  const int cols = (int)xr.cols;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const global dnnb_t* xrow = x + dnnb_row_start(xr, r);
    global dnnb_t* yrow = y + dnnb_row_start(yr, r);
    const global dnnb_t* mrow = mask_mode != 0 ? mask + dnnb_row_start(mr, r) : x;
#if DNNB_ROW_EARLY
    softmax_row_early(xrow, mrow, scale, softcap, yrow, cols, scratch);
#else
    const float mask_scalar = mask_mode == 2 ? DNNB_LOAD(mrow, 0) : 0.0f;
    // All of x's loads first, then z; softmax_z_of gives -inf to the columns past the row end.
    dnnb_raw_t raw[DNNB_ROW_VECS];
    dnnb_row_fetch(raw, xrow, cols, 0.0f);
    dnnb_vec cache[DNNB_ROW_VECS];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < DNNB_ROW_VECS; ++k) {
      cache[k] = softmax_z_of(dnnb_raw_get(raw[k]), mrow, mask_mode, mask_scalar, dnnb_chunk_col(k), cols, scale,
                              softcap);
      m = dnnb_lse_vmax(m, cache[k]);
    }
    softmax_finish_cached(cache, m, yrow, cols, scratch);
#endif
  }
}

// ---- softmax_rows ---------------------------------------------------------------------------

// z for columns c..c+3; columns past the row end are -inf so they add nothing.
inline float4 softmax_z4(const global dnnb_t* x, long xs, long x_cs, const global dnnb_t* mask, long ms,
                         long m_cs, int has_mask, long cols, long c, float scale, float softcap) {
  float4 t = dnnb_load_cols4(x, xs, x_cs, cols, c, 0.0f);
  if (softcap > 0.0f) t = softcap * tanh(t / softcap);
  float4 z = scale * t;
  if (has_mask) z += dnnb_load_cols4(mask, ms, m_cs, cols, c, 0.0f);
  if (c + 4 > cols) {
    if (c >= cols) z.x = -INFINITY;
    if (c + 1 >= cols) z.y = -INFINITY;
    if (c + 2 >= cols) z.z = -INFINITY;
    if (c + 3 >= cols) z.w = -INFINITY;
  }
  return z;
}

kernel void softmax_rows(const global dnnb_t* x, dnnb_rows xr, const global dnnb_t* mask, dnnb_rows mr,
                         int has_mask, float scale, float softcap, global dnnb_t* y, dnnb_rows yr,
                         local float* scratch) {
  const long lid = get_local_id(0);
  const long lsize = get_local_size(0);
  const long cols = xr.cols;
  for (long r = get_group_id(0); r < xr.rows; r += get_num_groups(0)) {
    const long xs = dnnb_row_start(xr, r);
    const long ms = has_mask ? dnnb_row_start(mr, r) : 0;
    const long ys = dnnb_row_start(yr, r);
    if (dnnb_row_fits_cache(cols)) {
      // One read of x (and mask): z stays in registers. Each work-item turns its z into
      // exp(z - its own max) and its sum; one tree merges the (max, sum) pairs; the store
      // rescales by exp(own max - row max) / row sum, one exp per work-item, not per element.
      float4 cache[DNNB_CACHE_VECS];
      float m_own = -INFINITY;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        cache[k] = c < cols ? softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask, cols, c,
                                         scale, softcap)
                            : (float4)(-INFINITY);
        m_own = dnnb_max_nan(m_own, dnnb_max4_nan(cache[k]));
      }
      float s_own = 0.0f;
      const float shift = m_own == -INFINITY ? 0.0f : m_own;  // all -inf: exp gives 0s
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        cache[k] = exp(cache[k] - shift);
        s_own += dnnb_sum4(cache[k]);
      }
      float m;
      const float s = dnnb_wg_softmax_stats(m_own, s_own, scratch, &m);
      // A fully masked row (m = -inf) gives 0, as SDPA does.
      const float factor = m == -INFINITY ? 0.0f : exp(shift - m) / s;
#pragma unroll
      for (int k = 0; k < DNNB_CACHE_VECS; ++k) {
        const long c = (k * lsize + lid) * 4;
        if (c < cols) dnnb_store_cols4(y, ys, yr.col_stride, cols, c, cache[k] * factor);
      }
    } else {
      // Rows too long for the registers: one pass for the (max, sum) pairs, one to write
      // (the re-read mostly hits the cache).
      const long step = lsize * 4;
      float m_own = -INFINITY;
      float s_own = 0.0f;
      for (long c = lid * 4; c < cols; c += step) {
        const float4 z = softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask, cols, c, scale,
                                    softcap);
        dnnb_softmax_add(z.x, &m_own, &s_own);
        dnnb_softmax_add(z.y, &m_own, &s_own);
        dnnb_softmax_add(z.z, &m_own, &s_own);
        dnnb_softmax_add(z.w, &m_own, &s_own);
      }
      float m;
      const float s = dnnb_wg_softmax_stats(m_own, s_own, scratch, &m);
      const float inv_s = m == -INFINITY ? 0.0f : 1.0f / s;
      const float shift = m == -INFINITY ? 0.0f : m;
      for (long c = lid * 4; c < cols; c += step) {
        const float4 z = softmax_z4(x, xs, xr.col_stride, mask, ms, mr.col_stride, has_mask, cols, c, scale,
                                    softcap);
        dnnb_store_cols4(y, ys, yr.col_stride, cols, c, exp(z - shift) * inv_s);
      }
    }
  }
}
