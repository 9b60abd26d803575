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
  const dnnb_mlstm_place place = mlstm_place(dm, (dm.dv + MLSTM_WG - 1) / MLSTM_WG);
  const long bh = place.bh, b = place.b, hd = place.hd;
  const long col0 = place.j * MLSTM_WG;

  // The gates, the same in every item.
  const float i_pre = ig[mlstm_head_base(iv, b, hd)];
  const float f_pre = fg[mlstm_head_base(fv, b, hd)];
  const float m_old = m[mlstm_head_base(mv, b, hd)];
  const float2 carried = mlstm_two_sum(mlstm_logsigmoid(f_pre), m_old);  // logsigmoid(f) + m
  const float2 i2 = (float2)(i_pre, 0.0f);
  const float2 m2 = mlstm_df_greater(i2, carried) ? i2 : carried;
  const float fgate = exp(mlstm_df_diff(carried, m2));
  const float igate = exp(mlstm_df_diff(i2, m2));

  const long q_base = mlstm_head_base(qv, b, hd);
  const long k_base = mlstm_head_base(kv, b, hd);
  const long n_base = mlstm_head_base(nv, b, hd);
  float qn = 0.0f;  // this item's part of q . n'
  for (long d = lid; d < dm.dqk; d += MLSTM_WG) {
    const float qd = DNNB_LOAD(q, q_base + d * qv.ss);
    const float kd = DNNB_LOAD(k, k_base + d * kv.ss);
    q_row[d] = qd;
    k_row[d] = kd;
    const float nd = fma(fgate, n[n_base + d * nv.ss], igate * kd);
    qn = fma(qd, nd, qn);
    if (col0 == 0) n_new[mlstm_head_base(nnv, b, hd) + d * nnv.ss] = nd;
  }
  qn_part[lid] = qn;
  barrier(CLK_LOCAL_MEM_FENCE);
  float qn_sum = 0.0f;  // every item sums the parts in the same order
  for (int e = 0; e < MLSTM_WG; ++e) qn_sum += qn_part[e];

  const long col = col0 + lid;
  if (col < dm.dv) {
    const float iv_col = igate * DNNB_LOAD(v, mlstm_head_base(vv, b, hd) + col * vv.ss);
    const long c_base = mlstm_head_base(cv, b, hd) + col * cv.se;
    const long cn_base = mlstm_head_base(cnv, b, hd) + col * cnv.se;
    float num = 0.0f;
    for (long d = 0; d < dm.dqk; ++d) {
      const float cd = fma(fgate, c[c_base + d * cv.ss], k_row[d] * iv_col);
      c_new[cn_base + d * cnv.ss] = cd;
      num = fma(q_row[d], cd, num);
    }
    const float norm = fmax(fabs(scale * qn_sum), mlstm_exp_neg(m2));
    DNNB_STORE(h, mlstm_head_base(hv, b, hd) + col * hv.ss, scale * num / (norm + eps));
  }
  if (col0 == 0 && lid == 0) m_new[mlstm_head_base(mnv, b, hd)] = m2.x + m2.y;
}
