// sdpa forward: o = softmax(scores) v and lse per query row, as a flash (online) softmax in f32.
// One work-group per (batch x head, block of SDPA_BQ query rows), SDPA_T lanes per query row
// (build options, kernels/opencl/sdpa_launch.h). The group stages its q rows once, then walks
// the visible keys in tiles of SDPA_BK: it stages the k and v tile in local memory as f32; each
// lane scores SDPA_BK / SDPA_T keys of its row into s_tile; every lane of a row takes the tile's
// max from s_tile and writes the probabilities of its own keys, exp(s - m), to p_tile; then each
// lane rescales its running sum and its float4 columns of o by exp(m_old - m) and adds the
// tile's p v. The lanes of a row compute the same max and sum in the same order, so they agree
// bit for bit. o = acc / l is rounded once to the dtype; lse = m + log(l) (f32). A row with no
// visible key keeps m = -inf and l = 0: o = 0 and lse = -inf.
// Key tiles: [0, Sk), cut to keys <= the block's last query (causal) and to keys > its first
// query - window (sliding window); visibility inside a tile is per pair (sdpa_score).
#if !defined(SDPA_BQ) || !defined(SDPA_BK)
#error "build with -DSDPA_BQ and -DSDPA_BK (kernels/opencl/sdpa_launch.h)"
#endif
#define SDPA_WG (SDPA_BQ * SDPA_T)
#define SDPA_KPL (SDPA_BK / SDPA_T)  // keys scored by one lane per tile

kernel __attribute__((reqd_work_group_size(SDPA_WG, 1, 1))) void sdpa_fwd(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global dnnb_t* mask, dnnb_sdpa_view mv, global dnnb_t* o, dnnb_sdpa_view ov,
    global float* lse, dnnb_sdpa_view lv, dnnb_sdpa_dims dm, float scale, float softcap) {
  local float4 q_tile[SDPA_BQ * SDPA_KW4];
  local float4 k_tile[SDPA_BK * SDPA_KW4];
  local float4 v_tile[SDPA_BK * SDPA_VW4];
  local float s_tile[SDPA_BQ * SDPA_BK];
  local float p_tile[SDPA_BQ * SDPA_BK];
  const int lid = get_local_id(0);
  const dnnb_sdpa_qblock w = sdpa_query_block(dm, kv, vv, lid);
  const int r = w.r, t = w.t;
  const long bh = w.bh, i0 = w.i0, b = w.b, h = w.h, kvh = w.kvh, i = w.i, k_base = w.k_base, v_base = w.v_base;
  sdpa_stage(q, qv.offset + b * qv.sb + h * qv.sh, qv, i0, dm.sq, dm.d, SDPA_BQ, SDPA_KW4, q_tile, lid, SDPA_WG);

  long lo = 0;
  long hi = dm.sk;
  if (dm.causal) hi = min(hi, min(dm.sq, i0 + SDPA_BQ));
  if (dm.window > 0) lo = max(0L, i0 - dm.window + 1);

  float m = -INFINITY;  // running max of the row's scores
  float l = 0.0f;       // running sum of exp(s - m)
  float4 acc[SDPA_DVT4];
  for (int c = 0; c < SDPA_DVT4; ++c) acc[c] = (float4)(0.0f);
  const local float4* q_row = q_tile + r * SDPA_KW4;
  local float* s_row = s_tile + r * SDPA_BK;
  local float* p_row = p_tile + r * SDPA_BK;

  for (long j0 = lo; j0 < hi; j0 += SDPA_BK) {
    barrier(CLK_LOCAL_MEM_FENCE);  // q staged; the previous tile's k, v and p no longer read
    sdpa_stage(k, k_base, kv, j0, dm.sk, dm.d, SDPA_BK, SDPA_KW4, k_tile, lid, SDPA_WG);
    sdpa_stage(v, v_base, vv, j0, dm.sk, dm.dv, SDPA_BK, SDPA_VW4, v_tile, lid, SDPA_WG);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int u = 0; u < SDPA_KPL; ++u) {
      const int jl = t + SDPA_T * u;
      float dcap;
      s_row[jl] = sdpa_score(q_row, k_tile + jl * SDPA_KW4, i, j0 + jl, dm, scale, softcap, mask, mv, &dcap);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float tile_max = -INFINITY;
    for (int jl = 0; jl < SDPA_BK; ++jl) tile_max = fmax(tile_max, s_row[jl]);
    const float m_new = fmax(m, tile_max);
    for (int u = 0; u < SDPA_KPL; ++u) {
      const int jl = t + SDPA_T * u;
      const float s = s_row[jl];
      p_row[jl] = s == -INFINITY ? 0.0f : exp(s - m_new);
    }
    const float alpha = m == -INFINITY ? 0.0f : exp(m - m_new);  // 0 while nothing was visible
    m = m_new;
    barrier(CLK_LOCAL_MEM_FENCE);
    float tile_sum = 0.0f;
    for (int c = 0; c < SDPA_DVT4; ++c) acc[c] *= alpha;
    for (int jl = 0; jl < SDPA_BK; ++jl) tile_sum += p_row[jl];
    sdpa_accumulate(acc, SDPA_DVT4, p_row, v_tile + t, SDPA_VW4, SDPA_BK);
    l = l * alpha + tile_sum;
  }

  if (i >= dm.sq) return;
  const long o_base = ov.offset + b * ov.sb + h * ov.sh + i * ov.ss;
  for (int c = 0; c < SDPA_DVT4; ++c) {
    const float4 out = l > 0.0f ? acc[c] / l : (float4)(0.0f);
    dnnb_store_cols4(o, o_base, ov.se, dm.dv, 4 * (long)(t + SDPA_T * c), out);
  }
  if (t == 0) lse[lv.offset + b * lv.sb + h * lv.sh + i * lv.ss] = l > 0.0f ? m + log(l) : -INFINITY;
}
