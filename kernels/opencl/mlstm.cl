// mlstm, the parallel form: h = (C / (n + eps)) v with C[t,s] = scale (q_t . k_s) D[t,s],
// n[t] = max(|sum_s C[t,s]|, exp(-m[t])), after the gate pre-pass mlstm_gates (mlstm_body.cl)
// has left a[s], M[t] (prefix max) and m[t] in `gates` (ga, then gc). Since
// D[t,s] = exp(a[s] - M[t]) needs no running max, one pass over the keys accumulates both
// sum_s C[t,s] v_s and the row sum.
// One work-group per (batch x head, block of SDPA_BQ query rows), SDPA_T lanes per row (build
// options, kernels/opencl/mlstm_launch.h). The group stages its q rows once, then walks the keys
// 0 .. (last query of the block) in tiles of SDPA_BK: it stages the k and v tile as f32 and the
// keys' a; each lane computes the weights C[t,s] of SDPA_BK / SDPA_T keys of its row into p_tile;
// then every lane adds the tile's row sum (all lanes of a row in the same order, so they agree
// bit for bit) and the p v of its own float4 columns. h is rounded once to the dtype; n and m
// are f32.
#if !defined(SDPA_BQ) || !defined(SDPA_BK)
#error "build with -DSDPA_BQ and -DSDPA_BK (kernels/opencl/mlstm_launch.h)"
#endif
#define SDPA_WG (SDPA_BQ * SDPA_T)
#define SDPA_KPL (SDPA_BK / SDPA_T)  // keys weighed by one lane per tile

kernel __attribute__((reqd_work_group_size(SDPA_WG, 1, 1))) void mlstm_fwd(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global float4* gates, global dnnb_t* h, dnnb_sdpa_view hv,
    global float* n, dnnb_sdpa_view nv, global float* m, dnnb_sdpa_view mv, dnnb_mlstm_dims dm, float scale,
    float eps) {
  local float4 q_tile[SDPA_BQ * SDPA_KW4];
  local float4 k_tile[SDPA_BK * SDPA_KW4];
  local float4 v_tile[SDPA_BK * SDPA_VW4];
  local float p_tile[SDPA_BQ * SDPA_BK];
  local float2 a_tile[SDPA_BK];
  const global float4* ga = gates;
  const global float4* gc = gates + dm.batch * dm.heads * dm.s;
  const int lid = get_local_id(0);
  const int r = lid / SDPA_T;
  const int t = lid - r * SDPA_T;
  const dnnb_mlstm_place place = mlstm_place(dm, (dm.s + SDPA_BQ - 1) / SDPA_BQ);
  const long bh = place.bh, b = place.b, hd = place.hd;
  const long i0 = place.j * SDPA_BQ;
  const long i = i0 + r;
  const long k_base = mlstm_head_base(kv, b, hd);
  const long v_base = mlstm_head_base(vv, b, hd);
  const long g_row = bh * dm.s;
  sdpa_stage(q, mlstm_head_base(qv, b, hd), qv, i0, dm.s, dm.dqk, SDPA_BQ, SDPA_KW4, q_tile, lid, SDPA_WG);
  const float4 gq = i < dm.s ? ga[g_row + i] : (float4)(0.0f);
  const float2 M = gq.zw;

  float rowsum = 0.0f;
  float4 acc[SDPA_DVT4];
  for (int c = 0; c < SDPA_DVT4; ++c) acc[c] = (float4)(0.0f);
  const local float4* q_row = q_tile + r * SDPA_KW4;
  local float* p_row = p_tile + r * SDPA_BK;
  const long hi = min(dm.s, i0 + SDPA_BQ);

  for (long j0 = 0; j0 < hi; j0 += SDPA_BK) {
    barrier(CLK_LOCAL_MEM_FENCE);  // q staged; the previous tile's k, v, a and p no longer read
    sdpa_stage(k, k_base, kv, j0, dm.s, dm.dqk, SDPA_BK, SDPA_KW4, k_tile, lid, SDPA_WG);
    sdpa_stage(v, v_base, vv, j0, dm.s, dm.dv, SDPA_BK, SDPA_VW4, v_tile, lid, SDPA_WG);
    for (int jl = lid; jl < SDPA_BK; jl += SDPA_WG)
      a_tile[jl] = j0 + jl < dm.s ? ga[g_row + j0 + jl].xy : (float2)(-INFINITY, 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int u = 0; u < SDPA_KPL; ++u) {
      const int jl = t + SDPA_T * u;
      const long j = j0 + jl;
      float w = 0.0f;
      if (i < dm.s && j <= i) w = scale * sdpa_dot(q_row, k_tile + jl * SDPA_KW4, SDPA_D4V) *
                                  exp(mlstm_df_diff(a_tile[jl], M));
      p_row[jl] = w;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int jl = 0; jl < SDPA_BK; ++jl) rowsum += p_row[jl];
    sdpa_accumulate(acc, SDPA_DVT4, p_row, v_tile + t, SDPA_VW4, SDPA_BK);
  }

  if (i >= dm.s) return;
  const float4 gm = gc[g_row + i];
  const float norm = fmax(fabs(rowsum), mlstm_exp_neg(gm.zw));
  const float denom = norm + eps;
  const long h_base = mlstm_head_base(hv, b, hd) + i * hv.ss;
  for (int c = 0; c < SDPA_DVT4; ++c)
    dnnb_store_cols4(h, h_base, hv.se, dm.dv, 4 * (long)(t + SDPA_T * c), acc[c] / denom);
  if (t == 0) {
    n[mlstm_head_base(nv, b, hd) + i * nv.ss] = norm;
    m[mlstm_head_base(mv, b, hd) + i * mv.ss] = gm.z + gm.w;
  }
}
