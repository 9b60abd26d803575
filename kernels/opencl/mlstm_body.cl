// What the mLSTM kernels share (mlstm.cl, mlstm_chunkwise.cl, mlstm_bwd.cl; docs/ops-family5.md):
// the problem's dims, double-float arithmetic, and the gate pre-pass mlstm_gates.
// The tiled kernels also take sdpa_body.cl (staging rows into local memory, the dot of two local
// rows, the lanes' accumulation of weighted rows), which the host puts before this file.
//
// The stabiliser in log space. With lf = logsigmoid(f), c[t] = lf[0] + ... + lf[t] and
// a[s] = i[s] - c[s], logD[t,s] = c[t] - c[s] + i[s] = c[t] + a[s] for s <= t, so the row max is
// m[t] = c[t] + M[t] with M[t] = max_{s<=t} a[s], a prefix max known before any score, and
// D[t,s] = exp(a[s] - M[t]) <= 1: no online rescaling. c reaches -1e4 and beyond over long
// sequences (f near 0), where one f32 ulp is ~1e-3: a plain f32 cumsum would carry errors of that
// size into every exp argument. So c, a and M are double-floats (hi + lo, ~48 bits, from
// error-free two-sums): a[s] - M[t] is exact in its hi part wherever it is small enough to
// matter (Sterbenz), and the only rounding left in an exp argument is of the small difference.

// The problem (ops::MlstmDesc). Host: ClMlstmDims in mlstm_launch.h, field for field.
typedef struct {
  long batch, heads, s, dqk, dv, chunk;
} dnnb_mlstm_dims;

// Where a work-group stands in a launch of `per_head` groups per (batch, head), groups of one
// head adjacent: bh = batch x head, its batch b and head hd, and j = the group's index within the
// head (its block of rows or tile of columns).
typedef struct {
  long bh, b, hd, j;
} dnnb_mlstm_place;

inline dnnb_mlstm_place mlstm_place(dnnb_mlstm_dims dm, long per_head) {
  dnnb_mlstm_place p;
  p.bh = get_group_id(0) / per_head;
  p.j = get_group_id(0) - p.bh * per_head;
  p.b = p.bh / dm.heads;
  p.hd = p.bh - p.b * dm.heads;
  return p;
}

// The offset of (batch b, head hd)'s first element in an operand.
inline long mlstm_head_base(dnnb_sdpa_view v, long b, long hd) { return v.offset + b * v.sb + hd * v.sh; }

// a + b = s + e exactly (Knuth's two-sum; no multiply, so FP_CONTRACT cannot fuse it).
inline float2 mlstm_two_sum(float a, float b) {
  const float s = a + b;
  const float bb = s - a;
  const float e = (a - (s - bb)) + (b - bb);
  return (float2)(s, e);
}

// The double-float (hi, lo) plus x, renormalised so that |lo| <= ulp(hi) / 2.
inline float2 mlstm_df_add(float2 a, float x) {
  const float2 s = mlstm_two_sum(a.x, x);
  const float lo = s.y + a.y;
  const float hi = s.x + lo;
  return (float2)(hi, lo - (hi - s.x));
}

// The double-float a + b.
inline float2 mlstm_df_add2(float2 a, float2 b) {
  const float2 s = mlstm_two_sum(a.x, b.x);
  const float lo = s.y + (a.y + b.y);
  const float hi = s.x + lo;
  return (float2)(hi, lo - (hi - s.x));
}

// a - b rounded to one float (an exp argument).
inline float mlstm_df_diff(float2 a, float2 b) {
  const float2 d = mlstm_two_sum(a.x, -b.x);
  return d.x + (d.y + (a.y - b.y));
}

// a > b for normalised double-floats.
inline bool mlstm_df_greater(float2 a, float2 b) { return a.x > b.x || (a.x == b.x && a.y > b.y); }

// logsigmoid(x) = min(x, 0) - log1p(exp(-|x|)): no overflow, no cancellation.
inline float mlstm_logsigmoid(float x) { return fmin(x, 0.0f) - log1p(exp(-fabs(x))); }

// exp(-m) for the double-float m: exp(-hi) exp(-lo), the second factor 1 - lo to f32 precision
// (|lo| <= ulp(hi) / 2).
inline float mlstm_exp_neg(float2 m) { return exp(-m.x) * (1.0f - m.y); }

// The gate pre-pass: one work-group of MLSTM_GATES_WG items per (batch, head) walks the sequence
// in blocks of MLSTM_GATES_WG positions (one per item) and writes, per position
// p = (b NH + h) S + t, into `gates` (ga, gc: B NH S float4 each; then arg: B NH S int):
//   ga[p] = (a.hi, a.lo, M.hi, M.lo)   M the prefix max of a, or max(0, prefix max) with
//                                      `clamp_zero` (the chunkwise form: its initial max state
//                                      0 acts as a key with a = 0 and no value, see
//                                      mlstm_chunkwise.cl)
//   gc[p] = (c.hi, c.lo, m.hi, m.lo)   m = c + M, the row max of logD
//   arg[p] = the first s <= t where a[s] = M[t] (the argmax of logD[t, :], where the backward
//            routes m's gradient; -1 where the chunkwise form's floor 0 is the max)
// Per block: an inclusive scan of logsigmoid(f) (double-float sums, Hillis-Steele in local
// memory) on top of the previous blocks' c, then a scan of (a, position) under "the later one
// if strictly greater" (so the first of equal maxima stays) on top of their max. A sequential
// walk would leave a GPU one work-item per head, latency-bound for S in the thousands.
// i and f are f32 [B, NH, S] views. A NaN gate makes c (and everything after it) NaN.
#ifndef MLSTM_GATES_WG
#error "build with -DMLSTM_GATES_WG (kernels/opencl/mlstm_launch.h)"
#endif
kernel __attribute__((reqd_work_group_size(MLSTM_GATES_WG, 1, 1))) void mlstm_gates(
    const global float* ig, dnnb_sdpa_view iv, const global float* fg, dnnb_sdpa_view fv, global float4* gates,
    dnnb_mlstm_dims dm, int clamp_zero) {
  local float2 sum_scan[MLSTM_GATES_WG];
  local float2 max_scan[MLSTM_GATES_WG];
  local int arg_scan[MLSTM_GATES_WG];
  global float4* ga = gates;
  global float4* gc = gates + dm.batch * dm.heads * dm.s;
  global int* arg = (global int*)(gc + dm.batch * dm.heads * dm.s);
  const int lid = get_local_id(0);
  const dnnb_mlstm_place place = mlstm_place(dm, 1);
  const long bh = place.bh, b = place.b, h = place.hd;
  const long i_base = mlstm_head_base(iv, b, h);
  const long f_base = mlstm_head_base(fv, b, h);
  float2 c_carry = (float2)(0.0f, 0.0f);  // c at the end of the previous blocks
  float2 m_carry = clamp_zero ? (float2)(0.0f, 0.0f) : (float2)(-INFINITY, 0.0f);  // their max of a
  int at_carry = -1;
  for (long t0 = 0; t0 < dm.s; t0 += MLSTM_GATES_WG) {
    const long t = t0 + lid;
    const bool in = t < dm.s;
    float2 c = (float2)(in ? mlstm_logsigmoid(fg[f_base + t * fv.ss]) : 0.0f, 0.0f);
    const float i_pre = in ? ig[i_base + t * iv.ss] : 0.0f;
    sum_scan[lid] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = 1; off < MLSTM_GATES_WG; off <<= 1) {
      const float2 y = lid >= off ? sum_scan[lid - off] : (float2)(0.0f, 0.0f);
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid >= off) c = mlstm_df_add2(y, c);
      sum_scan[lid] = c;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    c = mlstm_df_add2(c_carry, c);
    c_carry = mlstm_df_add2(c_carry, sum_scan[MLSTM_GATES_WG - 1]);
    float2 M = in ? mlstm_df_add((float2)(-c.x, -c.y), i_pre) : (float2)(-INFINITY, 0.0f);
    const float2 a = M;
    int at = in ? (int)t : -1;
    max_scan[lid] = M;
    arg_scan[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = 1; off < MLSTM_GATES_WG; off <<= 1) {
      float2 y = M;
      int y_at = at;
      if (lid >= off) y = max_scan[lid - off], y_at = arg_scan[lid - off];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid >= off && !mlstm_df_greater(M, y)) M = y, at = y_at;
      max_scan[lid] = M;
      arg_scan[lid] = at;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (at_carry >= 0 || clamp_zero) {
      if (!mlstm_df_greater(M, m_carry)) M = m_carry, at = at_carry;
    }
    const float2 block_max = max_scan[MLSTM_GATES_WG - 1];
    const int block_at = arg_scan[MLSTM_GATES_WG - 1];
    if ((at_carry < 0 && !clamp_zero) || mlstm_df_greater(block_max, m_carry)) m_carry = block_max, at_carry = block_at;
    barrier(CLK_LOCAL_MEM_FENCE);  // the scans' last entries read before the next block's writes
    if (!in) continue;
    const float2 m = mlstm_df_add2(c, M);
    ga[bh * dm.s + t] = (float4)(a.x, a.y, M.x, M.y);
    gc[bh * dm.s + t] = (float4)(c.x, c.y, m.x, m.y);
    arg[bh * dm.s + t] = at;
  }
}
