// mlstm_bwd: the gradients of the parallel form (autograd's, docs/ops-family5.md) from dh. With
// the forward's D = exp(a[s] - M[t]) (gate pre-pass, mlstm_body.cl), S = scale q k^T, C~ = S D,
// rs = sum_s C~, n = max(|rs|, exp(-m)), den = n + eps, h = C~ v / den:
//   dn[t] = -(dh_t . C~ v)[t] / den^2;  drs = dn sign(rs) where |rs| > exp(-m) (else 0), and
//   dm_n = -dn exp(-m) where exp(-m) is the max (else 0)
//   dC~[t,s] = (dh_t . v_s) / den[t] + drs[t]
//   dq_t = scale sum_s dC~ D k_s,  dk_s = scale sum_t dC~ D q_t,  dv_s = sum_t C~ dh_t / den[t]
//   dlogD = dC~ C~ + [s = argmax_s logD[t, :]] dm[t], dm[t] = dm_n[t] - sum_s dC~ C~
//   di[s] = sum_t dlogD[t,s];  dc[t] = dm_n[t] - di[t];  df[r] = sigmoid(-f[r]) sum_{t>=r} dc[t]
// (m = max_s logD routes its gradient to the argmax, as torch.max does; the rows of dlogD sum to
// dm_n.) Three kernels after the gate pre-pass, in order on the in-order queue, no atomics:
//   mlstm_bwd_rows  one work-group per (batch x head, block of SDPA_BQ query rows), SDPA_T lanes
//                   per row, walking the key tiles: dq, and per row (den, drs, dm, dm_n) into
//                   `rows` (scratch, past the gates' arrays). dC~ needs drs, known only after
//                   the row's sums, so the pass sums A = sum (dh.v) D k and B = sum D k apart:
//                   dq = scale (A / den + drs B).
//   mlstm_bwd_cols  one work-group per (batch x head, block of SDPA_BN keys), SDPA_T lanes per key,
//                   walking the query tiles from the block's first key on: dk, dv, di.
//   mlstm_bwd_df    one work-item per (batch x head): df by a reverse cumulative sum.
// den is the forward's n (an input) plus eps; D and exp(-m) are recomputed from the gates.
#if !defined(SDPA_BQ) || !defined(SDPA_BK) || !defined(SDPA_BN) || !defined(SDPA_BM)
#error "build with -DSDPA_BQ, -DSDPA_BK, -DSDPA_BN and -DSDPA_BM (kernels/opencl/mlstm_bwd.cpp)"
#endif
#define MLSTM_ROWS_WG (SDPA_BQ * SDPA_T)
#define MLSTM_COLS_WG (SDPA_BN * SDPA_T)

kernel __attribute__((reqd_work_group_size(MLSTM_ROWS_WG, 1, 1))) void mlstm_bwd_rows(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global dnnb_t* dh, dnnb_sdpa_view dhv, const global float* n, dnnb_sdpa_view nv,
    global float4* gates, long rows_at, global dnnb_t* dq, dnnb_sdpa_view dqv, dnnb_mlstm_dims dm, float scale,
    float eps) {
  local float4 q_tile[SDPA_BQ * SDPA_KW4];
  local float4 dh_tile[SDPA_BQ * SDPA_VW4];
  local float4 k_tile[SDPA_BK * SDPA_KW4];
  local float4 v_tile[SDPA_BK * SDPA_VW4];
  local float pa_tile[SDPA_BQ * SDPA_BK];  // (dh.v) D: A's weights
  local float pd_tile[SDPA_BQ * SDPA_BK];  // D: B's weights
  local float pc_tile[SDPA_BQ * SDPA_BK];  // C~: the row sum's terms
  local float pg_tile[SDPA_BQ * SDPA_BK];  // C~ (dh.v): dh . (C~ v)'s terms
  local float2 a_tile[SDPA_BK];
  const global float4* ga = gates;
  const global float4* gc = gates + dm.batch * dm.heads * dm.s;
  global float4* rows = gates + rows_at;
  const int lid = get_local_id(0);
  const int r = lid / SDPA_T;
  const int t = lid - r * SDPA_T;
  const dnnb_mlstm_place place = mlstm_place(dm, (dm.s + SDPA_BQ - 1) / SDPA_BQ);
  const long bh = place.bh, b = place.b, hd = place.hd;
  const long i0 = place.j * SDPA_BQ;
  const long i = i0 + r;
  const long g_row = bh * dm.s;
  const long k_base = mlstm_head_base(kv, b, hd);
  const long v_base = mlstm_head_base(vv, b, hd);
  sdpa_stage(q, mlstm_head_base(qv, b, hd), qv, i0, dm.s, dm.dqk, SDPA_BQ, SDPA_KW4, q_tile, lid,
             MLSTM_ROWS_WG);
  sdpa_stage(dh, mlstm_head_base(dhv, b, hd), dhv, i0, dm.s, dm.dv, SDPA_BQ, SDPA_VW4, dh_tile, lid,
             MLSTM_ROWS_WG);
  const float2 M = i < dm.s ? ga[g_row + i].zw : (float2)(0.0f, 0.0f);

  float4 acc_a[SDPA_DT4], acc_b[SDPA_DT4];
  for (int c = 0; c < SDPA_DT4; ++c) acc_a[c] = acc_b[c] = (float4)(0.0f);
  float rs = 0.0f, g = 0.0f;
  const local float4* q_row = q_tile + r * SDPA_KW4;
  const local float4* dh_row = dh_tile + r * SDPA_VW4;
  local float* pa_row = pa_tile + r * SDPA_BK;
  local float* pd_row = pd_tile + r * SDPA_BK;
  local float* pc_row = pc_tile + r * SDPA_BK;
  local float* pg_row = pg_tile + r * SDPA_BK;
  const long hi = min(dm.s, i0 + SDPA_BQ);

  for (long j0 = 0; j0 < hi; j0 += SDPA_BK) {
    barrier(CLK_LOCAL_MEM_FENCE);  // q, dh staged; the previous tile no longer read
    sdpa_stage(k, k_base, kv, j0, dm.s, dm.dqk, SDPA_BK, SDPA_KW4, k_tile, lid, MLSTM_ROWS_WG);
    sdpa_stage(v, v_base, vv, j0, dm.s, dm.dv, SDPA_BK, SDPA_VW4, v_tile, lid, MLSTM_ROWS_WG);
    for (int jl = lid; jl < SDPA_BK; jl += MLSTM_ROWS_WG)
      a_tile[jl] = j0 + jl < dm.s ? ga[g_row + j0 + jl].xy : (float2)(-INFINITY, 0.0f);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int u = 0; u < SDPA_BK / SDPA_T; ++u) {
      const int jl = t + SDPA_T * u;
      float wa = 0.0f, wd = 0.0f, wc = 0.0f, wg = 0.0f;
      if (i < dm.s && j0 + jl <= i) {
        wd = exp(mlstm_df_diff(a_tile[jl], M));
        const float dhv_s = sdpa_dot(dh_row, v_tile + jl * SDPA_VW4, SDPA_DV4V);
        wc = scale * sdpa_dot(q_row, k_tile + jl * SDPA_KW4, SDPA_D4V) * wd;
        wa = dhv_s * wd;
        wg = wc * dhv_s;
      }
      pa_row[jl] = wa;
      pd_row[jl] = wd;
      pc_row[jl] = wc;
      pg_row[jl] = wg;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int jl = 0; jl < SDPA_BK; ++jl) {
      rs += pc_row[jl];
      g += pg_row[jl];
    }
    sdpa_accumulate(acc_a, SDPA_DT4, pa_row, k_tile + t, SDPA_KW4, SDPA_BK);
    sdpa_accumulate(acc_b, SDPA_DT4, pd_row, k_tile + t, SDPA_KW4, SDPA_BK);
  }

  if (i >= dm.s) return;
  const float floor_m = mlstm_exp_neg(gc[g_row + i].zw);
  const float den = n[mlstm_head_base(nv, b, hd) + i * nv.ss] + eps;
  const float dn = -(g / den) / den;
  const bool by_sum = fabs(rs) > floor_m;
  const float drs = by_sum ? dn * sign(rs) : 0.0f;
  const float dm_n = by_sum ? 0.0f : -dn * floor_m;
  const long dq_base = mlstm_head_base(dqv, b, hd) + i * dqv.ss;
  for (int c = 0; c < SDPA_DT4; ++c)
    dnnb_store_cols4(dq, dq_base, dqv.se, dm.dqk, 4 * (long)(t + SDPA_T * c),
                     scale * (acc_a[c] / den + drs * acc_b[c]));
  if (t == 0) rows[g_row + i] = (float4)(den, drs, dm_n - (g / den + drs * rs), dm_n);
}

kernel __attribute__((reqd_work_group_size(MLSTM_COLS_WG, 1, 1))) void mlstm_bwd_cols(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global dnnb_t* dh, dnnb_sdpa_view dhv, const global float4* gates, long rows_at,
    global dnnb_t* dk, dnnb_sdpa_view dkv, global dnnb_t* dv, dnnb_sdpa_view dvv,
    global float* di, dnnb_sdpa_view di_v, dnnb_mlstm_dims dm, float scale) {
  local float4 k_tile[SDPA_BN * SDPA_KW4];
  local float4 v_tile[SDPA_BN * SDPA_VW4];
  local float4 q_tile[SDPA_BM * SDPA_KW4];
  local float4 dh_tile[SDPA_BM * SDPA_VW4];
  local float pk_tile[SDPA_BN * SDPA_BM];  // scale dC~ D: dk's weights
  local float pv_tile[SDPA_BN * SDPA_BM];  // C~ / den: dv's weights
  local float4 row_tile[SDPA_BM];          // the query rows' (1 / den, drs, dm, dm_n)
  local float2 m_tile[SDPA_BM];            // their M
  local int arg_tile[SDPA_BM];             // their argmax
  local float di_part[SDPA_BN * SDPA_T];
  const global float4* ga = gates;
  const global int* arg = (const global int*)(gates + 2 * dm.batch * dm.heads * dm.s);
  const global float4* rows = gates + rows_at;
  const int lid = get_local_id(0);
  const int r = lid / SDPA_T;
  const int t = lid - r * SDPA_T;
  const dnnb_mlstm_place place = mlstm_place(dm, (dm.s + SDPA_BN - 1) / SDPA_BN);
  const long bh = place.bh, b = place.b, hd = place.hd;
  const long s0 = place.j * SDPA_BN;
  const long s = s0 + r;
  const long g_row = bh * dm.s;
  const long q_base = mlstm_head_base(qv, b, hd);
  const long dh_base = mlstm_head_base(dhv, b, hd);
  sdpa_stage(k, mlstm_head_base(kv, b, hd), kv, s0, dm.s, dm.dqk, SDPA_BN, SDPA_KW4, k_tile, lid,
             MLSTM_COLS_WG);
  sdpa_stage(v, mlstm_head_base(vv, b, hd), vv, s0, dm.s, dm.dv, SDPA_BN, SDPA_VW4, v_tile, lid,
             MLSTM_COLS_WG);
  const float2 a = s < dm.s ? ga[g_row + s].xy : (float2)(-INFINITY, 0.0f);

  float4 acc_k[SDPA_DT4], acc_v[SDPA_DVT4];
  for (int c = 0; c < SDPA_DT4; ++c) acc_k[c] = (float4)(0.0f);
  for (int c = 0; c < SDPA_DVT4; ++c) acc_v[c] = (float4)(0.0f);
  float dis = 0.0f;
  const local float4* k_row = k_tile + r * SDPA_KW4;
  const local float4* v_row = v_tile + r * SDPA_VW4;
  local float* pk_row = pk_tile + r * SDPA_BM;
  local float* pv_row = pv_tile + r * SDPA_BM;

  for (long j0 = s0; j0 < dm.s; j0 += SDPA_BM) {
    barrier(CLK_LOCAL_MEM_FENCE);  // k, v staged; the previous tile no longer read
    sdpa_stage(q, q_base, qv, j0, dm.s, dm.dqk, SDPA_BM, SDPA_KW4, q_tile, lid, MLSTM_COLS_WG);
    sdpa_stage(dh, dh_base, dhv, j0, dm.s, dm.dv, SDPA_BM, SDPA_VW4, dh_tile, lid, MLSTM_COLS_WG);
    for (int jl = lid; jl < SDPA_BM; jl += MLSTM_COLS_WG) {
      const bool in = j0 + jl < dm.s;
      float4 ri = in ? rows[g_row + j0 + jl] : (float4)(1.0f, 0.0f, 0.0f, 0.0f);
      ri.x = 1.0f / ri.x;  // one division per row instead of two per (key, row) pair
      row_tile[jl] = ri;
      m_tile[jl] = in ? ga[g_row + j0 + jl].zw : (float2)(0.0f, 0.0f);
      arg_tile[jl] = in ? arg[g_row + j0 + jl] : -1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int u = 0; u < SDPA_BM / SDPA_T; ++u) {
      const int jl = t + SDPA_T * u;
      const long row = j0 + jl;
      float wk = 0.0f, wv = 0.0f;
      if (s < dm.s && row < dm.s && row >= s) {
        const float4 ri = row_tile[jl];  // 1 / den, drs, dm, dm_n
        const float d = exp(mlstm_df_diff(a, m_tile[jl]));
        const float ct = scale * sdpa_dot(q_tile + jl * SDPA_KW4, k_row, SDPA_D4V) * d;
        const float dct = fma(sdpa_dot(dh_tile + jl * SDPA_VW4, v_row, SDPA_DV4V), ri.x, ri.y);
        wk = scale * dct * d;
        wv = ct * ri.x;
        dis = fma(dct, ct, dis);
        if (arg_tile[jl] == s) dis += ri.z;
      }
      pk_row[jl] = wk;
      pv_row[jl] = wv;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    sdpa_accumulate(acc_k, SDPA_DT4, pk_row, q_tile + t, SDPA_KW4, SDPA_BM);
    sdpa_accumulate(acc_v, SDPA_DVT4, pv_row, dh_tile + t, SDPA_VW4, SDPA_BM);
  }

  di_part[lid] = dis;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (s >= dm.s) return;
  const long dk_base = mlstm_head_base(dkv, b, hd) + s * dkv.ss;
  const long dv_base = mlstm_head_base(dvv, b, hd) + s * dvv.ss;
  for (int c = 0; c < SDPA_DT4; ++c)
    dnnb_store_cols4(dk, dk_base, dkv.se, dm.dqk, 4 * (long)(t + SDPA_T * c), acc_k[c]);
  for (int c = 0; c < SDPA_DVT4; ++c)
    dnnb_store_cols4(dv, dv_base, dvv.se, dm.dv, 4 * (long)(t + SDPA_T * c), acc_v[c]);
  if (t == 0) {
    float sum = 0.0f;
    for (int e = 0; e < SDPA_T; ++e) sum += di_part[r * SDPA_T + e];
    di[mlstm_head_base(di_v, b, hd) + s * di_v.ss] = sum;
  }
}

// df[r] = sigmoid(-f[r]) sum_{t>=r} (dm_n[t] - di[t]), one work-item per (batch x head).
kernel void mlstm_bwd_df(const global float* fg, dnnb_sdpa_view fv, const global float4* gates, long rows_at,
                         const global float* di, dnnb_sdpa_view di_v, global float* df, dnnb_sdpa_view dfv,
                         dnnb_mlstm_dims dm) {
  const global float4* rows = gates + rows_at;
  const long bh = get_global_id(0);
  if (bh >= dm.batch * dm.heads) return;
  const long b = bh / dm.heads;
  const long hd = bh - b * dm.heads;
  float acc = 0.0f;
  for (long t = dm.s - 1; t >= 0; --t) {
    acc += rows[bh * dm.s + t].w - di[mlstm_head_base(di_v, b, hd) + t * di_v.ss];
    const float f = fg[mlstm_head_base(fv, b, hd) + t * fv.ss];
    df[mlstm_head_base(dfv, b, hd) + t * dfv.ss] = acc / (1.0f + exp(f));
  }
}
