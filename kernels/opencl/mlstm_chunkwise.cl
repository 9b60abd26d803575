// mlstm_chunkwise: h and the final states (c_last, n_last, m_last) of the chunkwise form
// (docs/ops-family5.md), with the states carried from chunk to chunk in local memory.
//
// In terms of the gate pre-pass (mlstm_body.cl, run with clamp_zero): the chunkwise form's max
// state after the positions s < e is c[e-1] + R with R = max(0, max_{s<e} a[s]) (its initial
// max state 0 acts as one more key with a = 0 and no value), and its row max of position t is
// m[t] = c[t] + M'[t], M'[t] = max(0, max_{s<=t} a[s]). The states after a chunk ending at e are
//   C = sum_{s<e} exp(a[s] - R) k_s v_s^T,   n = sum_{s<e} exp(a[s] - R) k_s   (k unscaled),
// and a row t of the next chunk (previous state C, n, R) is
//   num = scale exp(R - M'[t]) q_t^T C + sum_{chunk's s<=t} scale (q_t . k_s) exp(a[s] - M'[t]) v_s
//   den = scale exp(R - M'[t]) q_t . n + sum_{chunk's s<=t} scale (q_t . k_s) exp(a[s] - M'[t])
//   h = num / (max(|den|, exp(-m[t])) + eps)
// and the state moves on as C <- exp(R - R') C + sum_{chunk's s} exp(a[s] - R') k_s v_s^T. Every
// exp argument is <= 0 and a difference of double-floats. These are the package's chunkwise
// recurrences with their local cumsums written through c; the results do not depend on the
// chunk length, so the kernel's chunk is its tile MLSTM_LC (the problem's chunk= sets the
// reference's).
//
// One work-group of MLSTM_WG items per (batch x head, tile of MLSTM_VT columns of v): it walks
// the sequence in chunks of MLSTM_LC rows, holding its columns of C (DQK x MLSTM_VT) and all of n
// in local memory. Per chunk: stage q, k (f32, whole rows), v (the tile's columns) and the gates;
// the intra-chunk weights P[t,s] and each row's q.n term; h, item (g, c) taking column c of the
// rows g, g + G, ... (G = MLSTM_WG / MLSTM_VT); then the state update, item (g, c) taking the
// float4 rows g, g + G, ... of C's column c. The tile of columns 0 writes n_last and m_last.
#if !defined(MLSTM_WG) || !defined(MLSTM_LC) || !defined(MLSTM_VT)
#error "build with -DMLSTM_WG, -DMLSTM_LC and -DMLSTM_VT (kernels/opencl/mlstm_chunkwise.cpp)"
#endif
#if MLSTM_WG % MLSTM_VT != 0
#error "MLSTM_WG must be a multiple of MLSTM_VT"
#endif
#define MLSTM_DK4 (SDPA_D4 / 4)       // float4 of a q or k row
#define MLSTM_KW4 (MLSTM_DK4 + 1)     // float4 per local row of q or k: one of pad, so the rows
                                      // the items of one warp read at once fall on other banks
#define MLSTM_G (MLSTM_WG / MLSTM_VT)  // item groups: item (g, c) serves column c of the tile
#define MLSTM_RPI ((MLSTM_LC + MLSTM_G - 1) / MLSTM_G)    // rows of h per item: g, g + G, ...
#define MLSTM_CPI ((MLSTM_DK4 + MLSTM_G - 1) / MLSTM_G)  // float4 of C's rows per item: g, g + G, ...

kernel __attribute__((reqd_work_group_size(MLSTM_WG, 1, 1))) void mlstm_chunkwise_fwd(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global float4* gates, global dnnb_t* h, dnnb_sdpa_view hv, global float* c_last,
    dnnb_sdpa_view cv, global float* n_last, dnnb_sdpa_view nv, global float* m_last, dnnb_sdpa_view mv,
    dnnb_mlstm_dims dm, float scale, float eps) {
  local float c_state[SDPA_D4 * MLSTM_VT];  // C[d][c] of the tile's columns
  local float4 n_state[MLSTM_DK4];
  local float4 q_tile[MLSTM_LC * MLSTM_KW4];
  local float4 k_tile[MLSTM_LC * MLSTM_KW4];
  local float v_tile[MLSTM_LC * MLSTM_VT];
  local float p_tile[MLSTM_LC * MLSTM_LC];
  local float w_key[MLSTM_LC];    // exp(a[s] - R') of the chunk's keys, for the state update
  local float den[MLSTM_LC];      // each row's den
  local float inter[MLSTM_LC];    // each row's scale exp(R - M'[t])
  local float floor_[MLSTM_LC];   // each row's exp(-m[t])
  const global float4* ga = gates;
  const global float4* gc = gates + dm.batch * dm.heads * dm.s;
  const int lid = get_local_id(0);
  const int grp = lid / MLSTM_VT;
  const int col = lid - grp * MLSTM_VT;
  const dnnb_mlstm_place place = mlstm_place(dm, (dm.dv + MLSTM_VT - 1) / MLSTM_VT);
  const long bh = place.bh, b = place.b, hd = place.hd;
  const long col0 = place.j * MLSTM_VT;
  const long g_row = bh * dm.s;
  const long q_base = mlstm_head_base(qv, b, hd);
  const long k_base = mlstm_head_base(kv, b, hd);
  const long v_base = mlstm_head_base(vv, b, hd);
  const long h_base = mlstm_head_base(hv, b, hd);
  const int vt = (int)min((long)MLSTM_VT, dm.dv - col0);  // the tile's columns

  for (int e = lid; e < SDPA_D4 * MLSTM_VT; e += MLSTM_WG) c_state[e] = 0.0f;
  for (int e = lid; e < MLSTM_DK4; e += MLSTM_WG) n_state[e] = (float4)(0.0f);
  float2 R = (float2)(0.0f, 0.0f);  // the max state, as max(0, prefix max of a) so far

  for (long j0 = 0; j0 < dm.s; j0 += MLSTM_LC) {
    const int rows = (int)min((long)MLSTM_LC, dm.s - j0);
    const float2 R_next = ga[g_row + j0 + rows - 1].zw;
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous chunk's tiles and the state update done
    sdpa_stage(q, q_base, qv, j0, dm.s, dm.dqk, MLSTM_LC, MLSTM_KW4, q_tile, lid, MLSTM_WG);
    sdpa_stage(k, k_base, kv, j0, dm.s, dm.dqk, MLSTM_LC, MLSTM_KW4, k_tile, lid, MLSTM_WG);
    for (int e = lid; e < MLSTM_LC * MLSTM_VT; e += MLSTM_WG) {
      const int s = e / MLSTM_VT;
      const int c = e - s * MLSTM_VT;
      v_tile[e] = s < rows && c < vt ? DNNB_LOAD(v, v_base + (j0 + s) * vv.ss + (col0 + c) * vv.se) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // The intra-chunk weights, and per row the inter-chunk factor, the q.n term and exp(-m).
    for (int e = lid; e < MLSTM_LC * MLSTM_LC; e += MLSTM_WG) {
      const int t = e / MLSTM_LC;
      const int s = e - t * MLSTM_LC;
      float w = 0.0f;
      if (s <= t && t < rows)
        w = scale * sdpa_dot(q_tile + t * MLSTM_KW4, k_tile + s * MLSTM_KW4, MLSTM_DK4) *
            exp(mlstm_df_diff(ga[g_row + j0 + s].xy, ga[g_row + j0 + t].zw));
      p_tile[e] = w;
    }
    for (int t = lid; t < MLSTM_LC; t += MLSTM_WG) {
      float qn = 0.0f, f = 1.0f, fl = 0.0f, wk = 0.0f;
      if (t < rows) {
        f = scale * exp(mlstm_df_diff(R, ga[g_row + j0 + t].zw));
        qn = sdpa_dot(q_tile + t * MLSTM_KW4, n_state, MLSTM_DK4);
        fl = mlstm_exp_neg(gc[g_row + j0 + t].zw);
        wk = exp(mlstm_df_diff(ga[g_row + j0 + t].xy, R_next));
      }
      inter[t] = f;
      den[t] = f * qn;
      floor_[t] = fl;
      w_key[t] = wk;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = lid; t < MLSTM_LC; t += MLSTM_WG) {
      float sum = den[t];
      for (int s = 0; s <= t; ++s) sum += p_tile[t * MLSTM_LC + s];
      den[t] = sum;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // h of the item's rows grp, grp + G, ... in column col, from the previous state: q_t^T C
    // with each float4 of C's column loaded once for all of them.
    {
      float qc[MLSTM_RPI];
      for (int j = 0; j < MLSTM_RPI; ++j) qc[j] = 0.0f;
      for (int d4 = 0; d4 < MLSTM_DK4; ++d4) {
        const local float* cs = c_state + 4 * d4 * MLSTM_VT + col;
        const float4 cc = (float4)(cs[0], cs[MLSTM_VT], cs[2 * MLSTM_VT], cs[3 * MLSTM_VT]);
        for (int j = 0; j < MLSTM_RPI; ++j) {
          const int t = grp + MLSTM_G * j;
          if (t < MLSTM_LC) {
            const float4 qt = q_tile[t * MLSTM_KW4 + d4];
            qc[j] = fma(qt.w, cc.w, fma(qt.z, cc.z, fma(qt.y, cc.y, fma(qt.x, cc.x, qc[j]))));
          }
        }
      }
      for (int j = 0; j < MLSTM_RPI; ++j) {
        const int t = grp + MLSTM_G * j;
        if (t >= rows || col >= vt) continue;
        float num = inter[t] * qc[j];
        for (int s = 0; s <= t; ++s) num = fma(p_tile[t * MLSTM_LC + s], v_tile[s * MLSTM_VT + col], num);
        const float norm = fmax(fabs(den[t]), floor_[t]);
        DNNB_STORE(h, h_base + (j0 + t) * hv.ss + (col0 + col) * hv.se, num / (norm + eps));
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous state no longer read
    // C <- g C + sum_s w_s k_s v_s^T on the item's float4 rows grp, grp + G, ... of column col,
    // each w_s v_s[col] formed once for all of them.
    const float g = exp(mlstm_df_diff(R, R_next));
    {
      float4 acc[MLSTM_CPI];
      for (int j = 0; j < MLSTM_CPI; ++j) acc[j] = (float4)(0.0f);
      for (int s = 0; s < rows; ++s) {
        const float4 wv = (float4)(w_key[s] * v_tile[s * MLSTM_VT + col]);
        for (int j = 0; j < MLSTM_CPI; ++j) {
          const int d4 = grp + MLSTM_G * j;
          if (d4 < MLSTM_DK4) acc[j] = fma(wv, k_tile[s * MLSTM_KW4 + d4], acc[j]);
        }
      }
      for (int j = 0; j < MLSTM_CPI; ++j) {
        const int d4 = grp + MLSTM_G * j;
        if (d4 >= MLSTM_DK4) continue;
        local float* cs = c_state + 4 * d4 * MLSTM_VT + col;
        cs[0] = fma(g, cs[0], acc[j].x);
        cs[MLSTM_VT] = fma(g, cs[MLSTM_VT], acc[j].y);
        cs[2 * MLSTM_VT] = fma(g, cs[2 * MLSTM_VT], acc[j].z);
        cs[3 * MLSTM_VT] = fma(g, cs[3 * MLSTM_VT], acc[j].w);
      }
    }
    for (int d4 = lid; d4 < MLSTM_DK4; d4 += MLSTM_WG) {
      float4 acc = (float4)(0.0f);
      for (int s = 0; s < rows; ++s) acc = fma((float4)(w_key[s]), k_tile[s * MLSTM_KW4 + d4], acc);
      n_state[d4] = fma((float4)(g), n_state[d4], acc);
    }
    R = R_next;
  }

  barrier(CLK_LOCAL_MEM_FENCE);
  const long c_base = mlstm_head_base(cv, b, hd);
  for (int e = lid; e < SDPA_D4 * MLSTM_VT; e += MLSTM_WG) {
    const int d = e / MLSTM_VT;
    const int c = e - d * MLSTM_VT;
    if (d < dm.dqk && c < vt) c_last[c_base + d * cv.ss + (col0 + c) * cv.se] = c_state[e];
  }
  if (col0 != 0) return;
  const local float* n_flat = (const local float*)n_state;
  for (int d = lid; d < dm.dqk; d += MLSTM_WG) n_last[mlstm_head_base(nv, b, hd) + d * nv.ss] = n_flat[d];
  if (lid == 0) {
    const float4 last = gc[g_row + dm.s - 1];
    m_last[mlstm_head_base(mv, b, hd)] = last.z + last.w;
  }
}
