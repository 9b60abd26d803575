// What the attention kernels share (sdpa.cl, sdpa_bwd.cl): the operands' views, the problem's
// dims, staging rows of one head into local memory as f32, and the score of one (query, key)
// pair with its visibility, softcap and mask (docs/ops-family3.md, "Attention").
//
// Build options (kernels/opencl/sdpa_launch.h): SDPA_T work-items (lanes) per row of a tile,
// SDPA_D4 and SDPA_DV4 the head dims of q/k and of v rounded up to a multiple of 4.
// A lane owns the float4 columns t, t + T, t + 2T, ... of a row it accumulates, so the lanes of a
// row read consecutive float4 of a local row (no bank conflicts on a GPU); local rows hold every
// lane's columns plus one float4 of pad (rows read by the lanes of different rows at once then
// fall on different banks). Columns past the head dim are staged as zeros.
#if !defined(SDPA_T) || !defined(SDPA_D4) || !defined(SDPA_DV4)
#error "build with -DSDPA_T, -DSDPA_D4 and -DSDPA_DV4 (kernels/opencl/sdpa_launch.h)"
#endif
#define SDPA_D4V (SDPA_D4 / 4)                             // float4 of a q or k row
#define SDPA_DV4V (SDPA_DV4 / 4)                           // float4 of a v or o row
#define SDPA_DT4 ((SDPA_D4V + SDPA_T - 1) / SDPA_T)        // float4 columns of q/k per lane
#define SDPA_DVT4 ((SDPA_DV4V + SDPA_T - 1) / SDPA_T)      // float4 columns of v per lane
#define SDPA_KW4 (SDPA_T * SDPA_DT4 + 1)                   // float4 per local row of q, k, dq, dk width
#define SDPA_VW4 (SDPA_T * SDPA_DVT4 + 1)                  // float4 per local row of v, o, do width

// One operand as [B, H, S, E] strides in elements (lse: E unused; the mask [Sq, Sk]: B and H 0).
// Host: ClSdpaView in sdpa_launch.h, field for field.
typedef struct {
  long offset, sb, sh, ss, se;
} dnnb_sdpa_view;

// The problem (ops::SdpaDesc). Host: ClSdpaDims.
typedef struct {
  long batch, heads, kv_heads, sq, sk, d, dv, causal, window, has_mask;
} dnnb_sdpa_dims;

// Where a work-group over a block of SDPA_BQ query rows of one (batch, head) stands: item `lid`
// serves query row i (lane t of SDPA_T), its kv head kvh, and k_base / v_base start that kv
// head's keys and values. Shared by the forward and the backward's dq kernel.
typedef struct {
  int r, t;
  long bh, i0, b, h, kvh, i, k_base, v_base;
} dnnb_sdpa_qblock;

inline dnnb_sdpa_qblock sdpa_query_block(dnnb_sdpa_dims dm, dnnb_sdpa_view kv, dnnb_sdpa_view vv, int lid) {
  dnnb_sdpa_qblock w;
  w.r = lid / SDPA_T;
  w.t = lid - w.r * SDPA_T;
  const long blocks = (dm.sq + SDPA_BQ - 1) / SDPA_BQ;
  const long group = get_group_id(0);
  w.bh = group / blocks;
  w.i0 = (group - w.bh * blocks) * SDPA_BQ;
  w.b = w.bh / dm.heads;
  w.h = w.bh - w.b * dm.heads;
  w.kvh = w.h / (dm.heads / dm.kv_heads);
  w.i = w.i0 + w.r;
  w.k_base = kv.offset + w.b * kv.sb + w.kvh * kv.sh;
  w.v_base = vv.offset + w.b * vv.sb + w.kvh * vv.sh;
  return w;
}

// Rows row0 .. row0 + n_rows of one head (starting at `base`) into a local tile of `width4`
// float4 per row, as f32: rows past `rows_total` and columns past `cols` are zeros. All items of
// the work-group take part (`lid` of `wg`); consecutive items read consecutive columns.
inline void sdpa_stage(const global dnnb_t* p, long base, dnnb_sdpa_view v, long row0, long rows_total, long cols,
                       int n_rows, int width4, local float4* tile, int lid, int wg) {
  for (int idx = lid; idx < n_rows * width4; idx += wg) {
    const int r = idx / width4;
    const int c4 = idx - r * width4;
    const long row = row0 + r;
    tile[idx] = row < rows_total ? dnnb_load_cols4(p, base + row * v.ss, v.se, cols, 4 * (long)c4, 0.0f)
                                 : (float4)(0.0f);
  }
}

// Whether key j is visible to query i by length, causality and window (the mask aside).
inline bool sdpa_visible(dnnb_sdpa_dims dm, long i, long j) {
  if (i >= dm.sq || j >= dm.sk) return false;
  if (dm.causal && j > i) return false;
  if (dm.window > 0 && j <= i - dm.window) return false;
  return true;
}

// The sum of n float4 products of two local rows, in f32: four independent float4 sums (a
// CPU work-item's chain of dependent fmas would wait on each one's latency), then their lanes.
inline float sdpa_dot(const local float4* a, const local float4* b, int n) {
  float4 acc0 = (float4)(0.0f), acc1 = (float4)(0.0f), acc2 = (float4)(0.0f), acc3 = (float4)(0.0f);
  int e = 0;
  for (; e + 4 <= n; e += 4) {
    acc0 = fma(a[e], b[e], acc0);
    acc1 = fma(a[e + 1], b[e + 1], acc1);
    acc2 = fma(a[e + 2], b[e + 2], acc2);
    acc3 = fma(a[e + 3], b[e + 3], acc3);
  }
  for (; e < n; ++e) acc0 = fma(a[e], b[e], acc0);
  const float4 acc = (acc0 + acc1) + (acc2 + acc3);
  return (acc.x + acc.y) + (acc.z + acc.w);
}

// acc[c] += sum over j < n of w[j] rows[j * row_step + SDPA_T * c] for the lane's `count`
// float4 columns c (`rows` already offset by the lane; count a compile-time constant at every
// call). Four columns at a time with the rows inside: their sums stay in registers over the
// rows (a CPU work-item's whole row of them would be loaded and stored at every row).
inline void sdpa_accumulate(float4* acc, int count, const local float* w, const local float4* rows, int row_step,
                            int n) {
  for (int c0 = 0; c0 < count; c0 += 4) {
    const bool has1 = c0 + 1 < count, has2 = c0 + 2 < count, has3 = c0 + 3 < count;
    float4 a0 = acc[c0];
    float4 a1 = has1 ? acc[c0 + 1] : (float4)(0.0f);
    float4 a2 = has2 ? acc[c0 + 2] : (float4)(0.0f);
    float4 a3 = has3 ? acc[c0 + 3] : (float4)(0.0f);
    for (int j = 0; j < n; ++j) {
      const float4 wj = (float4)(w[j]);
      const local float4* row = rows + j * row_step + SDPA_T * c0;
      a0 = fma(wj, row[0], a0);
      if (has1) a1 = fma(wj, row[SDPA_T], a1);
      if (has2) a2 = fma(wj, row[2 * SDPA_T], a2);
      if (has3) a3 = fma(wj, row[3 * SDPA_T], a3);
    }
    acc[c0] = a0;
    if (has1) acc[c0 + 1] = a1;
    if (has2) acc[c0 + 2] = a2;
    if (has3) acc[c0 + 3] = a3;
  }
}

// The final score of query i and key j: scale q.k, then softcap c tanh(s / c), then the
// additive mask; -inf where the key is not visible. *dcap gets the softcap's derivative
// 1 - tanh^2 (1 without a softcap), which the backward multiplies into dS.
inline float sdpa_score(const local float4* q, const local float4* k, long i, long j, dnnb_sdpa_dims dm, float scale,
                        float softcap, const global dnnb_t* mask, dnnb_sdpa_view mv, float* dcap) {
  *dcap = 1.0f;
  if (!sdpa_visible(dm, i, j)) return -INFINITY;
  float s = scale * sdpa_dot(q, k, SDPA_D4V);
  if (softcap > 0.0f) {
    const float th = tanh(s / softcap);
    s = softcap * th;
    *dcap = 1.0f - th * th;
  }
  if (dm.has_mask) s += DNNB_LOAD(mask, mv.offset + i * mv.ss + j * mv.se);
  return s;
}
