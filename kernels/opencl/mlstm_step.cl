// mlstm_step: one token of the recurrent form (mlstm_kernels torch/recurrent/native_step.py):
//   m' = max(logsigmoid(f) + m, i),  F = exp(logsigmoid(f) + m - m'),  I = exp(i - m')
//   C' = F C + I k v^T,  n' = F n + I k,  h = (scale q)^T C' / (max(|scale q . n'|, exp(-m')) + eps)
// m is a large negative number after many steps with f near 0 (one f32 ulp ~1e-3 at -1e4), so
// logsigmoid(f) + m is kept as a double-float (mlstm_body.cl): the exp arguments are then exact
// differences, and m' is rounded to f32 only as an output.
// One work-group of MLSTM_WG items per (batch x head, tile of MLSTM_WG columns of v): each item
// owns one column of C, walks its DQK rows (C' = F C + I k v^T, the column's q^T C'), and the
// group stages q, k and n' in local memory. The tile of columns 0 writes n' and m'.
#ifndef MLSTM_WG
#error "build with -DMLSTM_WG (kernels/opencl/mlstm_step.cpp)"
#endif

kernel __attribute__((reqd_work_group_size(MLSTM_WG, 1, 1))) void mlstm_step(
    const global dnnb_t* q, dnnb_sdpa_view qv, const global dnnb_t* k, dnnb_sdpa_view kv, const global dnnb_t* v,
    dnnb_sdpa_view vv, const global float* ig, dnnb_sdpa_view iv, const global float* fg, dnnb_sdpa_view fv,
    const global float* c, dnnb_sdpa_view cv, const global float* n, dnnb_sdpa_view nv, const global float* m,
    dnnb_sdpa_view mv, global dnnb_t* h, dnnb_sdpa_view hv, global float* c_new, dnnb_sdpa_view cnv,
    global float* n_new, dnnb_sdpa_view nnv, global float* m_new, dnnb_sdpa_view mnv, dnnb_mlstm_dims dm,
    float scale, float eps) {
  local float q_row[SDPA_D4];
  local float k_row[SDPA_D4];
  local float qn_part[MLSTM_WG];
  const int lid = get_local_id(0);
  const long tiles = (dm.dv + MLSTM_WG - 1) / MLSTM_WG;
  const long bh = get_group_id(0) / tiles;
  const long col0 = (get_group_id(0) - bh * tiles) * MLSTM_WG;
  const long b = bh / dm.heads;
  const long hd = bh - b * dm.heads;

  // The gates, the same in every item.
  const float i_pre = ig[iv.offset + b * iv.sb + hd * iv.sh];
  const float f_pre = fg[fv.offset + b * fv.sb + hd * fv.sh];
  const float m_old = m[mv.offset + b * mv.sb + hd * mv.sh];
  const float2 carried = mlstm_two_sum(mlstm_logsigmoid(f_pre), m_old);  // logsigmoid(f) + m
  const float2 i2 = (float2)(i_pre, 0.0f);
  const float2 m2 = mlstm_df_greater(i2, carried) ? i2 : carried;
  const float fgate = exp(mlstm_df_diff(carried, m2));
  const float igate = exp(mlstm_df_diff(i2, m2));

  const long q_base = qv.offset + b * qv.sb + hd * qv.sh;
  const long k_base = kv.offset + b * kv.sb + hd * kv.sh;
  const long n_base = nv.offset + b * nv.sb + hd * nv.sh;
  float qn = 0.0f;  // this item's part of q . n'
  for (long d = lid; d < dm.dqk; d += MLSTM_WG) {
    const float qd = DNNB_LOAD(q, q_base + d * qv.ss);
    const float kd = DNNB_LOAD(k, k_base + d * kv.ss);
    q_row[d] = qd;
    k_row[d] = kd;
    const float nd = fma(fgate, n[n_base + d * nv.ss], igate * kd);
    qn = fma(qd, nd, qn);
    if (col0 == 0) n_new[nnv.offset + b * nnv.sb + hd * nnv.sh + d * nnv.ss] = nd;
  }
  qn_part[lid] = qn;
  barrier(CLK_LOCAL_MEM_FENCE);
  float qn_sum = 0.0f;  // every item sums the parts in the same order
  for (int e = 0; e < MLSTM_WG; ++e) qn_sum += qn_part[e];

  const long col = col0 + lid;
  if (col < dm.dv) {
    const float iv_col = igate * DNNB_LOAD(v, vv.offset + b * vv.sb + hd * vv.sh + col * vv.ss);
    const long c_base = cv.offset + b * cv.sb + hd * cv.sh + col * cv.se;
    const long cn_base = cnv.offset + b * cnv.sb + hd * cnv.sh + col * cnv.se;
    float num = 0.0f;
    for (long d = 0; d < dm.dqk; ++d) {
      const float cd = fma(fgate, c[c_base + d * cv.ss], k_row[d] * iv_col);
      c_new[cn_base + d * cnv.ss] = cd;
      num = fma(q_row[d], cd, num);
    }
    const float norm = fmax(fabs(scale * qn_sum), mlstm_exp_neg(m2));
    DNNB_STORE(h, hv.offset + b * hv.sb + hd * hv.sh + col * hv.ss, scale * num / (norm + eps));
  }
  if (col0 == 0 && lid == 0) m_new[mnv.offset + b * mnv.sb + hd * mnv.sh] = m2.x + m2.y;
}
