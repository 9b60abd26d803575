// sdpa backward from the forward's o and lse (FlashAttention's): p = exp(s - lse),
// D_i = do_i . o_i, dS = p (dP - D) (times the softcap's 1 - tanh^2), dP = do v^T;
// dq = scale dS k, dk = scale dS^T q, dv = p^T do. Three kernels, no atomics:
// - sdpa_bwd_dot: D_i per query row into scratch (one work-item per row).
// - sdpa_bwd_dq: one work-group per (batch x head, block of SDPA_BQ query rows), SDPA_T lanes
//   per row, walking the visible keys in tiles of SDPA_BK (as the forward): each lane writes dS
//   of its keys to ds_tile and adds ds_tile k to its float4 columns of dq, with p = exp(s - lse)
//   unnormalized, and sums those p; the inverse of the row's sum (the row's norm, below) scales
//   dq at the end and goes to scratch for sdpa_bwd_dkdv.
// - sdpa_bwd_dkdv: one work-group per (batch x kv head, block of SDPA_BN keys), SDPA_T lanes per
//   key, walking every query head of the group and the query tiles of SDPA_BM rows that can see
//   the block: each lane writes p and dS of its queries to p_tile and ds_tile, then adds p^T do
//   and dS^T q to its columns of dv and dk. dk and dv are summed over the group's heads in
//   registers and written once.
// The norm: lse comes rounded to f32 (an error of up to |lse| 2^-24 in every exponent), and the
// kernel's f32 scores differ from the forward's by their own rounding; with scores of order
// 100 either error alone moves p by more than PyTorch's own f32 error (the peaked fixture).
// p = exp(s - lse) / sum_j exp(s_j - lse) is the softmax of the kernel's own scores, which
// cancels the lse's rounding and any error the row's scores share.
// Where a score is -inf (not visible, masked) or the row has lse = -inf (no visible key), p and
// dS are 0 (never exp(-inf + inf)).
// Scratch `dd`: D_i at [0, rows), the norm at [rows, 2 rows), rows = batch x heads x Sq.
#if !defined(SDPA_BQ) || !defined(SDPA_BK) || !defined(SDPA_BN) || !defined(SDPA_BM)
#error "build with -DSDPA_BQ, -DSDPA_BK, -DSDPA_BN and -DSDPA_BM (kernels/opencl/sdpa_launch.h)"
#endif
#define SDPA_DQ_WG (SDPA_BQ * SDPA_T)
#define SDPA_DKV_WG (SDPA_BN * SDPA_T)

kernel void sdpa_bwd_dot(const global dnnb_t* o, dnnb_sdpa_view ov, const global dnnb_t* dout, dnnb_sdpa_view gv,
                         global float* dd, dnnb_sdpa_dims dm) {
  const long rows = dm.batch * dm.heads * dm.sq;
  for (long row = get_global_id(0); row < rows; row += get_global_size(0)) {
    const long bh = row / dm.sq;
    const long i = row - bh * dm.sq;
    const long b = bh / dm.heads;
    const long h = bh - b * dm.heads;
    const long o_base = ov.offset + b * ov.sb + h * ov.sh + i * ov.ss;
    const long g_base = gv.offset + b * gv.sb + h * gv.sh + i * gv.ss;
    float sum = 0.0f;
    for (long c = 0; c < dm.dv; ++c) sum = fma(DNNB_LOAD(dout, g_base + c * gv.se), DNNB_LOAD(o, o_base + c * ov.se), sum);
    dd[row] = sum;
  }
}

// exp(s - lse) of one pair, 0 where s or lse is -inf.
inline float sdpa_unnormalized(float s, float row_lse) {
  return s == -INFINITY || row_lse == -INFINITY ? 0.0f : exp(s - row_lse);
}

// dS of one pair, with p through *p_out; scale folded in (dS here is scale dS of the header).
inline float sdpa_ds(const local float4* q, const local float4* k, const local float4* g, const local float4* v, long i,
                     long j, float row_lse, float row_norm, float row_d, dnnb_sdpa_dims dm, float scale, float softcap,
                     const global dnnb_t* mask, dnnb_sdpa_view mv, float* p_out) {
  float dcap;
  const float s = sdpa_score(q, k, i, j, dm, scale, softcap, mask, mv, &dcap);
  const float p = sdpa_unnormalized(s, row_lse) * row_norm;
  *p_out = p;
  if (p == 0.0f) return 0.0f;
  return p * (sdpa_dot(g, v, SDPA_DV4V) - row_d) * dcap * scale;
}

kernel __attribute__((reqd_work_group_size(SDPA_DQ_WG, 1, 1))) void sdpa_bwd_dq(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global dnnb_t* mask, dnnb_sdpa_view mv, const global dnnb_t* dout, dnnb_sdpa_view gv,
    const global float* lse, dnnb_sdpa_view lv, global float* dd, global dnnb_t* dq, dnnb_sdpa_view dqv,
    dnnb_sdpa_dims dm, float scale, float softcap) {
  local float4 q_tile[SDPA_BQ * SDPA_KW4];
  local float4 g_tile[SDPA_BQ * SDPA_VW4];
  local float4 k_tile[SDPA_BK * SDPA_KW4];
  local float4 v_tile[SDPA_BK * SDPA_VW4];
  local float ds_tile[SDPA_BQ * SDPA_BK];
  local float lane_sums[SDPA_DQ_WG];
  const int lid = get_local_id(0);
  const dnnb_sdpa_qblock w = sdpa_query_block(dm, kv, vv, lid);
  const int r = w.r, t = w.t;
  const long bh = w.bh, i0 = w.i0, b = w.b, h = w.h, kvh = w.kvh, i = w.i, k_base = w.k_base, v_base = w.v_base;
  sdpa_stage(q, qv.offset + b * qv.sb + h * qv.sh, qv, i0, dm.sq, dm.d, SDPA_BQ, SDPA_KW4, q_tile, lid, SDPA_DQ_WG);
  sdpa_stage(dout, gv.offset + b * gv.sb + h * gv.sh, gv, i0, dm.sq, dm.dv, SDPA_BQ, SDPA_VW4, g_tile, lid,
             SDPA_DQ_WG);
  const float row_lse = i < dm.sq ? lse[lv.offset + b * lv.sb + h * lv.sh + i * lv.ss] : -INFINITY;
  const float row_d = i < dm.sq ? dd[bh * dm.sq + i] : 0.0f;

  long lo = 0;
  long hi = dm.sk;
  if (dm.causal) hi = min(hi, min(dm.sq, i0 + SDPA_BQ));
  if (dm.window > 0) lo = max(0L, i0 - dm.window + 1);

  const local float4* q_row = q_tile + r * SDPA_KW4;
  const local float4* g_row = g_tile + r * SDPA_VW4;
  local float* ds_row = ds_tile + r * SDPA_BK;

  // dS and dq of the unnormalized p = exp(s - lse), and each lane's sum of those p over its keys;
  // the row's norm (the lanes' sums added in lane order, so every lane of the row has the same)
  // is a factor of the whole row of dS, applied to dq at the end.
  float lane_sum = 0.0f;
  float4 acc[SDPA_DT4];
  for (int c = 0; c < SDPA_DT4; ++c) acc[c] = (float4)(0.0f);
  for (long j0 = lo; j0 < hi; j0 += SDPA_BK) {
    barrier(CLK_LOCAL_MEM_FENCE);  // q and do staged; the previous tile no longer read
    sdpa_stage(k, k_base, kv, j0, dm.sk, dm.d, SDPA_BK, SDPA_KW4, k_tile, lid, SDPA_DQ_WG);
    sdpa_stage(v, v_base, vv, j0, dm.sk, dm.dv, SDPA_BK, SDPA_VW4, v_tile, lid, SDPA_DQ_WG);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int jl = t; jl < SDPA_BK; jl += SDPA_T) {
      float p;
      ds_row[jl] = sdpa_ds(q_row, k_tile + jl * SDPA_KW4, g_row, v_tile + jl * SDPA_VW4, i, j0 + jl, row_lse, 1.0f,
                           row_d, dm, scale, softcap, mask, mv, &p);
      lane_sum += p;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    sdpa_accumulate(acc, SDPA_DT4, ds_row, k_tile + t, SDPA_KW4, SDPA_BK);
  }
  lane_sums[lid] = lane_sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  float row_sum = 0.0f;
  for (int u = 0; u < SDPA_T; ++u) row_sum += lane_sums[r * SDPA_T + u];
  const float row_norm = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
  const long rows = dm.batch * dm.heads * dm.sq;
  if (t == 0 && i < dm.sq) dd[rows + bh * dm.sq + i] = row_norm;

  if (i >= dm.sq) return;
  const long dq_base = dqv.offset + b * dqv.sb + h * dqv.sh + i * dqv.ss;
  for (int c = 0; c < SDPA_DT4; ++c)
    dnnb_store_cols4(dq, dq_base, dqv.se, dm.d, 4 * (long)(t + SDPA_T * c), acc[c] * row_norm);
}

kernel __attribute__((reqd_work_group_size(SDPA_DKV_WG, 1, 1))) void sdpa_bwd_dkdv(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global dnnb_t* mask, dnnb_sdpa_view mv, const global dnnb_t* dout, dnnb_sdpa_view gv,
    const global float* lse, dnnb_sdpa_view lv, const global float* dd, global dnnb_t* dk, dnnb_sdpa_view dkv,
    global dnnb_t* dv, dnnb_sdpa_view dvv, dnnb_sdpa_dims dm, float scale, float softcap) {
  local float4 k_tile[SDPA_BN * SDPA_KW4];
  local float4 v_tile[SDPA_BN * SDPA_VW4];
  local float4 q_tile[SDPA_BM * SDPA_KW4];
  local float4 g_tile[SDPA_BM * SDPA_VW4];
  local float p_tile[SDPA_BN * SDPA_BM];
  local float ds_tile[SDPA_BN * SDPA_BM];
  local float lse_tile[SDPA_BM];
  local float d_tile[SDPA_BM];
  local float norm_tile[SDPA_BM];
  const int lid = get_local_id(0);
  const int r = lid / SDPA_T;
  const int t = lid - r * SDPA_T;
  const long blocks = (dm.sk + SDPA_BN - 1) / SDPA_BN;
  const long group = get_group_id(0);
  const long bkv = group / blocks;
  const long j0 = (group - bkv * blocks) * SDPA_BN;
  const long b = bkv / dm.kv_heads;
  const long kvh = bkv - b * dm.kv_heads;
  const long heads_per_kv = dm.heads / dm.kv_heads;
  const long rows = dm.batch * dm.heads * dm.sq;
  const long j = j0 + r;
  sdpa_stage(k, kv.offset + b * kv.sb + kvh * kv.sh, kv, j0, dm.sk, dm.d, SDPA_BN, SDPA_KW4, k_tile, lid, SDPA_DKV_WG);
  sdpa_stage(v, vv.offset + b * vv.sb + kvh * vv.sh, vv, j0, dm.sk, dm.dv, SDPA_BN, SDPA_VW4, v_tile, lid,
             SDPA_DKV_WG);

  // Queries that can see a key of the block: i >= j0 (causal), i < last key + window (window).
  long lo = 0;
  long hi = dm.sq;
  if (dm.causal) lo = j0;
  if (dm.window > 0) hi = min(hi, j0 + SDPA_BN - 1 + dm.window);

  float4 acc_k[SDPA_DT4];
  float4 acc_v[SDPA_DVT4];
  for (int c = 0; c < SDPA_DT4; ++c) acc_k[c] = (float4)(0.0f);
  for (int c = 0; c < SDPA_DVT4; ++c) acc_v[c] = (float4)(0.0f);
  const local float4* k_row = k_tile + r * SDPA_KW4;
  const local float4* v_row = v_tile + r * SDPA_VW4;
  local float* p_row = p_tile + r * SDPA_BM;
  local float* ds_row = ds_tile + r * SDPA_BM;

  for (long hh = 0; hh < heads_per_kv; ++hh) {
    const long h = kvh * heads_per_kv + hh;
    const long q_base = qv.offset + b * qv.sb + h * qv.sh;
    const long g_base = gv.offset + b * gv.sb + h * gv.sh;
    const long bh = b * dm.heads + h;
    for (long i0 = lo; i0 < hi; i0 += SDPA_BM) {
      barrier(CLK_LOCAL_MEM_FENCE);  // k and v staged; the previous query tile no longer read
      sdpa_stage(q, q_base, qv, i0, dm.sq, dm.d, SDPA_BM, SDPA_KW4, q_tile, lid, SDPA_DKV_WG);
      sdpa_stage(dout, g_base, gv, i0, dm.sq, dm.dv, SDPA_BM, SDPA_VW4, g_tile, lid, SDPA_DKV_WG);
      for (int il = lid; il < SDPA_BM; il += SDPA_DKV_WG) {
        const long i = i0 + il;
        lse_tile[il] = i < dm.sq ? lse[lv.offset + b * lv.sb + h * lv.sh + i * lv.ss] : -INFINITY;
        d_tile[il] = i < dm.sq ? dd[bh * dm.sq + i] : 0.0f;
        norm_tile[il] = i < dm.sq ? dd[rows + bh * dm.sq + i] : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int il = t; il < SDPA_BM; il += SDPA_T) {
        float p;
        ds_row[il] = sdpa_ds(q_tile + il * SDPA_KW4, k_row, g_tile + il * SDPA_VW4, v_row, i0 + il, j, lse_tile[il],
                             norm_tile[il], d_tile[il], dm, scale, softcap, mask, mv, &p);
        p_row[il] = p;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      sdpa_accumulate(acc_v, SDPA_DVT4, p_row, g_tile + t, SDPA_VW4, SDPA_BM);
      sdpa_accumulate(acc_k, SDPA_DT4, ds_row, q_tile + t, SDPA_KW4, SDPA_BM);
    }
  }

  if (j >= dm.sk) return;
  const long dk_base = dkv.offset + b * dkv.sb + kvh * dkv.sh + j * dkv.ss;
  const long dv_base = dvv.offset + b * dvv.sb + kvh * dvv.sh + j * dvv.ss;
  for (int c = 0; c < SDPA_DT4; ++c) dnnb_store_cols4(dk, dk_base, dkv.se, dm.d, 4 * (long)(t + SDPA_T * c), acc_k[c]);
  for (int c = 0; c < SDPA_DVT4; ++c)
    dnnb_store_cols4(dv, dv_base, dvv.se, dm.dv, 4 * (long)(t + SDPA_T * c), acc_v[c]);
}
