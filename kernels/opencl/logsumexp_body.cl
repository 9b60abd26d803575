// Row statistics for softmax and the cross-entropy programs (placed after the prelude, and after
// row_body.cl in the programs of the row-cached kernels).
// ce_rows / ce_bwd_rows: the row max m and s = sum exp(x - m) in one read: each work-item keeps a
// running pair that rescales when its max grows, and one work-group tree merges the pairs.
// Returns s; *m_out gets m.
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

// ---- the row-cached statistics (row_body.cl): softmax_cached and the cross-entropy kernels ----
// Without row_body.cl (DNNB_ROW_VECS undefined) the rest of this file is left out.
#ifdef DNNB_ROW_VECS
// Every row-cached kernel of softmax and the cross-entropy ops takes the same steps, so the two
// forms below share one code path (z: a chunk of the row's values, -inf past the row end):
//   float m = -INFINITY;  for each chunk z: m = dnnb_lse_vmax(m, z);
//   m = dnnb_lse_max(m, scratch);  const float shift = dnnb_lse_shift(m);
//   float s = 0.0f;       for each chunk z: s += dnnb_vsum(dnnb_row_exp(z - shift));
//   const dnnb_lse_t st = dnnb_lse_sum_all(m, s, scratch);   (or _first: the row's in item 0 only)
// then st.m, st.shift, st.s (the row's), st.item_shift and st.own (below).
//  - Two reductions (default): dnnb_lse_max is a work-group max, so shift is the row's, and
//    dnnb_lse_sum_* a work-group sum. Two two-level trees: six barriers per row.
//  - One reduction (-DDNNB_ROW_ONE=1, RowPlan::one_reduction: the bf16 cross-entropy ops):
//    dnnb_lse_max keeps the item's own max m_i, so each item sums its exps about its own max (s_i),
//    and dnnb_lse_sum_* merges the (m_i, s_i) pairs in one two-level tree: M = max m_i,
//    S = sum s_i e^(m_i - M). Three barriers per row (_all), two when only item 0 needs the result
//    (_first: the forward loss). The barrier trees are a fixed cost per row, which a bf16 row
//    (half the bytes of an f32 one) amortises over fewer bytes: this form halves it.
// Writing kernels (softmax, the gradient) take each element's exp about st.item_shift, the shift
// of the sum pass (a float cache holds those exps; a packed one recomputes the same expression,
// which a compiler may also keep from the sum pass), times st.own, the factor to the row's shift:
// the two-reduction form has item_shift = shift and own = 1 (folded away); the one-reduction form
// the item's own shift and own = e^(m_i - M). (Recomputing about M instead, exp(x - M), would make
// the two exps of a packed row's element different expressions: two exps per element for sure,
// and clang + ptxas for sm_90 kept the widened row anyway, 128 registers against 122.) own
// multiplies each exp before 1/S does (one more multiply per element): folded into 1/S first,
// own / S is an f32 subnormal for an item whose max lies ~60 below the row's (bf16: 2^-100 x
// 2^-32), where the bf16 outputs it scales are still normal. In bf16 fast-exp programs own also
// carries the 2^32 bias (a factor e^(m_i - M) below 2^-126, which ex2.approx.ftz flushes, still
// scales outputs that bf16 keeps down to 2^-133), and own_unbias = 2^-32 goes into 1/S (exact:
// 1/S >= 2^-46, so 2^-78 is normal).
//  - Online (-DDNNB_LSE_ONLINE=1 on top of DNNB_ROW_ONE and raw loads, RowPlan::online: the bf16
//    forward loss, through dnnb_row_logsumexp_of_raw): each item takes its
//    (m_i, s_i) in one streaming pass over its chunks, chunk by chunk: m' = max(m, chunk max),
//    s = s e^(m - m') + sum e^(z - m') (one more exp per chunk). Nothing but x (packed bits) needs
//    to stay live past a chunk, where the two-pass form keeps the widened row or its exps from the
//    max pass to the sum pass: clang + ptxas for sm_90, bf16 8192 columns, wg128 packed: the
//    forward loss 40 registers against 85 (12 rows per SM instead of 5 by the register file). A
//    writing kernel would recompute every exp about the row's max (item_shift = shift, own = 1,
//    as the packed two-reduction kernel): two exps per element, nothing cached but x. Error: each
//    term of S meets up to one rescale per later chunk (<= VECS - 1) on top of the three exps below, each one more ex2 error: S within 2^-24 (ln cols + 22.2) + (VECS + 2) 2^-22,
//    <= 4.3e-6 (8 chunks per item) / 6.2e-6 (16) for 16384 columns; a row whose loss is small is
//    carried by its max's term, which meets no rescale (it is the max from its chunk on): ~2^-22.
#ifndef DNNB_LSE_ONLINE
#define DNNB_LSE_ONLINE 0
#endif
#if DNNB_LSE_ONLINE && !(DNNB_ROW_ONE && DNNB_ROW_RAW)
#error "DNNB_LSE_ONLINE extends the one-reduction raw plans: build it with DNNB_ROW_ONE=1 and DNNB_ROW_RAW=1"
#endif
typedef struct {
  float m;           // the row max (one reduction: NaN-free, see below)
  float shift;       // m, or 0 for a row of -inf (exp(-inf - 0) = 0 where -inf - -inf is NaN)
  float s;           // sum over the row of dnnb_row_exp(z - shift)
  float item_shift;  // the shift of this item's exps (see above)
  float own;         // their factor to exps about shift
  float own_unbias;  // 2^-bias where own carries dnnb_row_exp's 2^bias, else 1: y = (e own)(unbias / S)
} dnnb_lse_t;

inline float dnnb_lse_shift(float m) { return m == -INFINITY ? 0.0f : m; }

#if DNNB_ROW_ONE
// NaN and inf in the one-reduction form. The item max is fmax (NaN-ignoring: one FMNMX per element
// on NVIDIA, where dnnb_max_nan is a compare, a NaN test and a select), so m_i is never NaN; a NaN
// shows up in the sums instead: e^(NaN - shift) is NaN, so s_i, S and every output made from S are
// NaN (the loss log(S) + ..., the gradient), as the two-reduction form makes them NaN through a NaN
// max. +inf: m_i = inf, e^(inf - inf) = NaN: S is NaN, as the two-reduction form's s. A row of
// -inf: M = -inf, shift 0, every term e^(-inf) = 0, S = 0. A row with a finite max has S >= 1
// (2^bias in fast-exp programs): the max's own term, its factors e^0 = 1. Pairs (-inf, 0) of items
// past the row end add 0 * e^(-inf - shift) = 0 (shift is finite or 0, never -inf).
#if DNNB_VW == 4
inline float dnnb_vfmax(float4 v) { return fmax(fmax(v.x, v.y), fmax(v.z, v.w)); }
#else
inline float dnnb_vfmax(float8 v) {
  return fmax(fmax(fmax(v.s0, v.s1), fmax(v.s2, v.s3)), fmax(fmax(v.s4, v.s5), fmax(v.s6, v.s7)));
}
#endif
inline float dnnb_lse_vmax(float m, dnnb_vec z) { return fmax(m, dnnb_vfmax(z)); }
inline float dnnb_lse_max(float m, local float* scratch) { return m; }

// e^d for the merge factors, d = m_i - shift <= 0, -inf or NaN; unbiased (the sums carry
// dnnb_row_exp's 2^bias already). The exp flavour of the plan: native_exp2 in fast-exp programs.
// Error (extends dnnb_row_exp's analysis in row_body.cl): an element at w = z - M <= 0 reaches S
// through up to three exps, e^(z - m_i) (with the bias), e^(m_i - M_g) (level 1), e^(M_g - M)
// (level 2), whose arguments are <= 0 apart from the bias and add up to w. Rounding an argument t
// (in log2 units) costs at most half its ulp, <= 2^-24 |t|, times ln 2, so together <= 2^-24 (|w| +
// bias ln 2) relative, plus three ex2 errors (3 x 2^-22 = 7.2e-7) where the two-reduction form has
// one. S's error is the mean of its terms' errors weighted by the terms, and that mean of |w| is
// H(p) - ln(S / max term) <= ln(cols) (p the row's softmax, S >= its max term): for rows of up to
// 16384 columns, S is within 2^-24 (9.7 + 22.2) + 7.2e-7 = 2.6e-6 (bf16, bias 32; 1.3e-6 for f16)
// against 2.1e-6 for the two-reduction form's S by the same count. So the bf16 loss moves by
// <= 2.6e-6 absolute (row_body.cl's bound for the two-reduction form: 2.9e-6). y = e / S (the
// gradient): packed plans recompute e about M, as the two-reduction form; unpacked ones take e^(z - m_i) e^(m_i - M), two rounded
// arguments (half-ulps <= 2 x 2^-18 at the bf16 tail, both biased, |t| <= 101; <= 2 x 2^-20 for
// the f16 outputs that are not 0, |t| <= 25) and one more ex2 error. y is within 1e-5 (bf16, 0.003 ulp)
// / 3.1e-6 (f16, 0.0065 ulp) before its one rounding (the two-reduction form: 0.002 / 0.005): still
// at most a 1-ulp flip next to a tie, inside the 2-ulp tolerance. Flush: a factor below 2^-126 (ex2.approx.ftz) drops a term s_i e^d < 2^(7 + 32 - 126)
// (<= 128 elements per item) from S >= 2^32: nothing that shows in f32.
inline float dnnb_lse_exp(float d) {
#if DNNB_HALF_MATH >= 2
  return native_exp2(d * M_LOG2E_F);
#else
  return exp(d);
#endif
}

// scratch (floats, DNNB_LSE_SCRATCH per row): [0, WG) the items' m_i, [WG, 2 WG) their s_i, then
// the 16 level-1 maxima, the 16 level-1 sums, the 16 level-2 terms and the row max.
#define DNNB_LSE_M1 (2 * DNNB_ROW_WG)
#define DNNB_LSE_S1 (DNNB_LSE_M1 + 16)
#define DNNB_LSE_T2 (DNNB_LSE_S1 + 16)
#define DNNB_LSE_MROW (DNNB_LSE_T2 + 16)
#define DNNB_LSE_SCRATCH (DNNB_LSE_MROW + 1)

// Level 1, as row_body.cl's trees: items 0..15 each merge the pairs lid, lid + 16, ... (stride 16:
// consecutive banks), max first, then the sum of s_j e^(m_j - max) in that order (fixed: bitwise
// reproducible). No barrier at the end of either form: every region is written again only after a
// barrier that each of its readers reaches after reading it ([0, 2 WG) is read before the second
// barrier and written before the next row's first; the level-1 and level-2 slots are read before
// the next row's first barrier and written after it), so the next row may start at once.
inline void dnnb_lse_level1(float m, float s, local float* scratch) {
  const int lid = get_local_id(0);
  scratch[lid] = m;
  scratch[DNNB_ROW_WG + lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid < 16) {
    float mg = scratch[lid];
    for (int j = 1; j < DNNB_ROW_WG / 16; ++j) mg = fmax(mg, scratch[lid + 16 * j]);
    const float shift = dnnb_lse_shift(mg);
    float sg = 0.0f;
    for (int j = 0; j < DNNB_ROW_WG / 16; ++j)
      sg += scratch[DNNB_ROW_WG + lid + 16 * j] * dnnb_lse_exp(scratch[lid + 16 * j] - shift);
    scratch[DNNB_LSE_M1 + lid] = mg;
    scratch[DNNB_LSE_S1 + lid] = sg;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

inline float dnnb_lse_level2_max(local float* scratch) {
  float mm = scratch[DNNB_LSE_M1];
  for (int j = 1; j < 16; ++j) mm = fmax(mm, scratch[DNNB_LSE_M1 + j]);
  return mm;
}

inline dnnb_lse_t dnnb_lse_result(float m_row, float s_row, float m_own) {
  dnnb_lse_t st;
  st.m = m_row;
  st.shift = dnnb_lse_shift(m_row);
  st.s = s_row;
#if DNNB_LSE_ONLINE
  st.item_shift = st.shift;  // the write pass recomputes every exp about the row's max
  st.own = 1.0f;
  st.own_unbias = 1.0f;
#else
  st.item_shift = dnnb_lse_shift(m_own);
  // dnnb_row_exp's flavour and bias (unused, so removed, in the forward loss)
  st.own = DNNB_EXP16_SCALED(m_own - st.shift, float);
  st.own_unbias = DNNB_EXP16_UNBIAS;
#endif
  return st;
}

// Every item gets the row's statistics. Level 2 in two steps so the row costs 16 merge exps, not
// 16 per item: items 0..15 each scale one level-1 sum to the row max, then every item adds the 16
// terms (in order).
inline dnnb_lse_t dnnb_lse_sum_all(float m, float s, local float* scratch) {
  dnnb_lse_level1(m, s, scratch);
  const int lid = get_local_id(0);
  if (lid < 16) {
    const float mrow = dnnb_lse_level2_max(scratch);
    scratch[DNNB_LSE_T2 + lid] =
        scratch[DNNB_LSE_S1 + lid] * dnnb_lse_exp(scratch[DNNB_LSE_M1 + lid] - dnnb_lse_shift(mrow));
    if (lid == 0) scratch[DNNB_LSE_MROW] = mrow;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  float total = scratch[DNNB_LSE_T2];
  for (int j = 1; j < 16; ++j) total += scratch[DNNB_LSE_T2 + j];
  return dnnb_lse_result(scratch[DNNB_LSE_MROW], total, m);
}

// Only item 0 gets the row's statistics (the others: their own pair): the same terms added in the
// same order as dnnb_lse_sum_all (bit-identical S), without its third barrier.
inline dnnb_lse_t dnnb_lse_sum_first(float m, float s, local float* scratch) {
  dnnb_lse_level1(m, s, scratch);
  float mrow = m;
  float total = s;
  if (get_local_id(0) == 0) {
    mrow = dnnb_lse_level2_max(scratch);
    const float shift = dnnb_lse_shift(mrow);
    total = scratch[DNNB_LSE_S1] * dnnb_lse_exp(scratch[DNNB_LSE_M1] - shift);
    for (int j = 1; j < 16; ++j) total += scratch[DNNB_LSE_S1 + j] * dnnb_lse_exp(scratch[DNNB_LSE_M1 + j] - shift);
  }
  return dnnb_lse_result(mrow, total, m);
}

#else
inline float dnnb_lse_vmax(float m, dnnb_vec z) { return dnnb_max_nan(m, dnnb_vmax(z)); }
inline float dnnb_lse_max(float m, local float* scratch) { return dnnb_row_wg_max(m, scratch); }
inline dnnb_lse_t dnnb_lse_sum_all(float m, float s, local float* scratch) {
  dnnb_lse_t st;
  st.m = m;
  st.shift = dnnb_lse_shift(m);
  st.s = dnnb_row_wg_sum(s, scratch);
  st.item_shift = st.shift;
  st.own = 1.0f;
  st.own_unbias = 1.0f;
  return st;
}
#define dnnb_lse_sum_first dnnb_lse_sum_all
// softmax's 1/S, or 0 for a row whose z are all -inf (y = 0, as SDPA).
inline float dnnb_lse_inv_masked(dnnb_lse_t st) { return st.m == -INFINITY ? 0.0f : 1.0f / st.s; }
#define DNNB_LSE_SCRATCH DNNB_ROW_SCRATCH
#endif

// ---- the cross-entropy rows ------------------------------------------------------------------
// The row is loaded once into `cache` (columns past the end as -inf); the steps above, one exp
// per element, left in `cache` (the backward pass reuses them through dnnb_row_lse_exp).
// Packed (DNNB_ROW_PACKED): the cache keeps x's bits and dnnb_row_lse_exp recomputes the exp (the
// forward loss needs none; the backward pays one more). The exps are dnnb_row_exp (row_body.cl):
// in 16-bit fast-exp plans (DNNB_HALF_MATH=2) they and s carry the factor 2^DNNB_EXP16_BIAS,
// which the backward's e / s cancels and the forward removes before its log.
// The exp(x - shift) of one cached chunk (times 2^DNNB_EXP16_BIAS), shift = st.item_shift (then
// times st.own).
inline dnnb_vec dnnb_row_lse_exp(dnnb_cache_t e, float shift) {
#if DNNB_ROW_PACKED || DNNB_LSE_ONLINE
  return dnnb_row_exp(dnnb_cache_get(e) - shift);
#else
  return e;
#endif
}

// The sum pass, once `cache` holds the row and *m this item's max: returns this item's s; *m
// becomes what dnnb_lse_sum_* takes (the row max, or with DNNB_ROW_ONE this item's max). The
// caller then calls dnnb_lse_sum_all or _first (a row of -inf gives m = -inf, s = 0).
inline float dnnb_row_lse_pass(private dnnb_cache_t* cache, float* m, local float* scratch) {
  *m = dnnb_lse_max(*m, scratch);
  const float shift = dnnb_lse_shift(*m);
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
  return s;
}

// The same for a row already fetched as raw chunks (dnnb_row_fetch with fill -inf).
inline float dnnb_row_logsumexp_of_raw(const private dnnb_raw_t* raw, private dnnb_cache_t* cache, float* m_out,
                                       local float* scratch) {
#if DNNB_LSE_ONLINE
  // One streaming pass (see "online" above): the cache keeps x for the write pass.
  float m = -INFINITY;
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
    cache[k] = dnnb_cache_of_raw(raw[k]);
    const dnnb_vec z = dnnb_raw_get(raw[k]);
    const float m_new = dnnb_lse_vmax(m, z);
    const float shift = dnnb_lse_shift(m_new);
    s = s * dnnb_lse_exp(m - shift) + dnnb_vsum(dnnb_row_exp(z - shift));
    m = m_new;
  }
  *m_out = m;
  return s;
#else
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < DNNB_ROW_VECS; ++k) {
    cache[k] = dnnb_cache_of_raw(raw[k]);
    m = dnnb_lse_vmax(m, dnnb_cache_get(cache[k]));
  }
  *m_out = m;
  return dnnb_row_lse_pass(cache, m_out, scratch);
#endif
}

// This item's part of the row's statistics (s returned, *m_out as dnnb_row_lse_pass leaves it):
// all of x's loads first (row_body.cl "raw loads").
inline float dnnb_row_logsumexp_cached(const global dnnb_t* row, int cols, private dnnb_cache_t* cache,
                                       float* m_out, local float* scratch) {
  dnnb_raw_t raw[DNNB_ROW_VECS];
  dnnb_row_fetch(raw, row, cols, -INFINITY);
  return dnnb_row_logsumexp_of_raw(raw, cache, m_out, scratch);
}
#endif
