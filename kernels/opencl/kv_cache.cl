// kv_cache (suites/ops/kv_cache_desc.h): store the new token's k and v rows into the caches at
// pos[b], then decode attention of each query head over positions 0..pos[b] of its kv head.
// Three kernels, launched in this order on one in-order queue (kv_cache.cpp):
//   kv_store    one work-group per (b, kv head g): both rows rounded into the cache format
//               exactly as reference::store_cache_row does (bit for bit);
//   kv_decode   one work-group per (b, g, split of positions): the group's G query heads score
//               every key of the split (each key decoded once for all G heads), online softmax
//               in f32, partial (m, l, acc) per (b, head, split) into the workspace;
//   kv_combine  one work-group per (b, head): the splits merged by their logsumexp, o rounded
//               once to the problem dtype.
// Positions past pos[b] are never read (they hold NaN in the check). A pos[b] outside [0, C)
// stores nothing and gives a NaN row of o.
//
// Build options (kv_cache.cpp): the problem dtype (-DDNNB_F32/F16/BF16, prelude.cl), the cache
// format (-DKV_CACHE_F32, _F16, _BF16, _E4M3 or _Q8_0), KV_D4 (head dim / 4), KV_G (query heads
// per kv head), KV_TK (keys staged per tile), KV_WG (work-items of kv_decode), KV_HS and KV_KS
// (kv_decode's accumulate layout, below), KV_HPS (heads per item when scoring), KV_KT4 (float4 of
// the key tile, also the scratch of the final reduction when KV_KS > 1), KV_SOFTCAP (Gemma 2's
// softcap: scores s -> softcap tanh(s / softcap) before the softmax; kv_dims.window is the
// sliding window: positions before pos[b] - window + 1 are not read). f32 division must be correctly rounded
// (-cl-fp32-correctly-rounded-divide-sqrt; the host refuses f8_e4m3fn and q8_0 caches otherwise).
#if !defined(KV_D4) || !defined(KV_G) || !defined(KV_TK) || !defined(KV_WG) || !defined(KV_HS) || \
    !defined(KV_KS) || !defined(KV_HPS) || !defined(KV_KT4)
#error "build with -DKV_D4, -DKV_G, -DKV_TK, -DKV_WG, -DKV_HS, -DKV_KS, -DKV_HPS and -DKV_KT4 (kv_cache.cpp)"
#endif
#define KV_D (4 * KV_D4)
#define KV_HPI ((KV_G + KV_HS - 1) / KV_HS)  // heads one item accumulates
#define KV_NHC ((KV_G + KV_HPS - 1) / KV_HPS) // head chunks of the scoring
#define KV_KW4 (KV_D4 + 1)                    // float4 per local key row (one of pad: banks)
#if KV_WG != KV_D4 * KV_HS * KV_KS
#error "KV_WG must be KV_D4 * KV_HS * KV_KS"
#endif

// Operand views: [B, H, D] (q, o) or [B, KV, D] (k, v) strides in elements. Host: ClKvView.
typedef struct {
  long offset, sb, sh, se;
} kv_view;

// The problem and the split of positions. Host: ClKvDims.
typedef struct {
  long batch, heads, kv_heads, capacity, splits, split_len;
  long window;  // > 0: a query at p reads positions p - window + 1 .. p only
} kv_dims;

// The first position the query at p reads (Gemma 2's sliding window; 0 without one).
inline long kv_first(kv_dims dm, long p) { return dm.window > 0 ? max(p - dm.window + 1, 0L) : 0L; }

// ---- storing: f32 to a narrower float, round to nearest even ------------------------------
// core/dtype.cpp encode_narrow_float in integers: |value| = significand x 2^(exponent - 23)
// counted in quanta of the target (2^(e - M) at exponent e, 2^(min_exp - M) below the smallest
// normal), rounded to nearest even; past max_finite -> on_overflow; Inf and NaN keep the sign.
inline uint kv_encode(float value, int m, int bias, int min_exp, uint max_finite, uint on_overflow, uint on_inf,
                      uint on_nan, int sign_shift) {
  const uint bits = as_uint(value);
  const uint sign = (bits >> 31) << sign_shift;
  const uint mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return sign | on_nan;
  if (mag == 0x7f800000u) return sign | on_inf;
  const uint field = mag >> 23;
  const int exponent = field == 0 ? -126 : (int)field - 127;
  const uint significand = field == 0 ? (mag & 0x7fffffu) : ((mag & 0x7fffffu) | 0x800000u);
  const int target = max(exponent, min_exp);
  const int shift = (target - m) - (exponent - 23);  // >= 23 - m > 0
  uint quanta = 0;
  if (shift <= 24) {
    quanta = significand >> shift;
    const uint remainder = significand & ((1u << shift) - 1u);
    const uint halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (quanta & 1u) != 0)) ++quanta;
  }
  // A round-up to 2^(m+1) quanta carries into the exponent field, as the encoding needs.
  const uint encoded = ((uint)(target + bias - 1) << m) + quanta;
  return encoded > max_finite ? (sign | on_overflow) : (sign | encoded);
}
inline ushort kv_f32_to_f16(float v) { return (ushort)kv_encode(v, 10, 15, -14, 0x7bffu, 0x7c00u, 0x7c00u, 0x7e00u, 15); }
inline ushort kv_f32_to_bf16(float v) {
  return (ushort)kv_encode(v, 7, 127, -126, 0x7f7fu, 0x7f80u, 0x7f80u, 0x7fc0u, 15);
}
// e4m3fn as core/dtype.cpp: no Inf; finite overflow and +-Inf give +-448, NaN 0x7f/0xff.
inline uchar kv_f32_to_e4m3(float v) { return (uchar)kv_encode(v, 3, 7, -6, 0x7eu, 0x7eu, 0x7eu, 0x7fu, 7); }

// e4m3fn to f32, exact: S.EEEE.MMM, E = 0 subnormal (M x 2^-9), S.1111.111 NaN.
inline float kv_e4m3_to_f32(uint b) {
  const uint e = (b >> 3) & 15u, m = b & 7u;
  const float normal = as_float(((e + 120u) << 23) | (m << 20));
  const float subnormal = (float)m * 0x1p-9f;
  float mag = e == 0 ? subnormal : normal;
  mag = (b & 0x7fu) == 0x7fu ? NAN : mag;
  return as_float(as_uint(mag) | ((b & 0x80u) << 24));
}

// ---- the cache format ----------------------------------------------------------------------
#if defined(KV_CACHE_F32)
#define KV_ROW_BYTES (KV_D * 4)
#elif defined(KV_CACHE_F16) || defined(KV_CACHE_BF16)
#define KV_ROW_BYTES (KV_D * 2)
#elif defined(KV_CACHE_E4M3)
#define KV_ROW_BYTES KV_D
#elif defined(KV_CACHE_Q8_0)
#define KV_ROW_BYTES (KV_D / 32 * 34)  // per 32 values: f16 d, 32 x int8
#if KV_D % 32 != 0
#error "q8_0 needs a head dim that is a multiple of 32"
#endif
#else
#error "build with one of -DKV_CACHE_F32, _F16, _BF16, _E4M3, _Q8_0"
#endif

// Values c..c+3 (c a multiple of 4) of a cache row, decoded to f32 (e4m3 times its scale).
inline float4 kv_decode4(const global uchar* row, int c, float scale) {
#if defined(KV_CACHE_F32)
  return vload4(0, (const global float*)row + c);
#elif defined(KV_CACHE_F16)
  return vload_half4(0, (const global half*)row + c);
#elif defined(KV_CACHE_BF16)
  return as_float4(convert_uint4(vload4(0, (const global ushort*)row + c)) << 16);
#elif defined(KV_CACHE_E4M3)
  const uchar4 b = vload4(0, row + c);
  return (float4)(kv_e4m3_to_f32(b.x), kv_e4m3_to_f32(b.y), kv_e4m3_to_f32(b.z), kv_e4m3_to_f32(b.w)) * scale;
#else
  const global uchar* block = row + (c / 32) * 34;
  const float d = vload_half(0, (const global half*)block);
  return d * convert_float4(vload4(0, (const global char*)(block + 2 + c % 32)));  // exact products
#endif
}

// One 32-value block of q8_0 (core/dtype.cpp quantize_row): a block with a NaN or an Inf gets
// d = f16 NaN (0x7e00) and q = 0; else ggml's quantize_row_q8_0_ref: d = amax / 127, id = 1 / d
// (0 for d = 0), q = round(x id) half away from zero, clamped to +-127 (NaN -> 0: only where
// id is Inf), d stored as f16 rounded to nearest even.
inline void kv_quantize_q8_0(const float* x, global uchar* block) {
  bool finite = true;
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    finite = finite && isfinite(x[j]);
    amax = fmax(amax, fabs(x[j]));
  }
  global char* q = (global char*)(block + 2);
  if (!finite) {
    *(global ushort*)block = (ushort)0x7e00u;
    for (int j = 0; j < 32; ++j) q[j] = 0;
    return;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *(global ushort*)block = kv_f32_to_f16(d);
  for (int j = 0; j < 32; ++j) {
    const float r = round(x[j] * id);
    q[j] = (char)(isnan(r) ? 0 : (int)clamp(r, -127.0f, 127.0f));
  }
}

// Value e of a cache row from the f32 value x (not q8_0: whole blocks, above).
inline void kv_store_value(global uchar* row, int e, float x, float scale) {
#if defined(KV_CACHE_F32)
  ((global float*)row)[e] = x;
#elif defined(KV_CACHE_F16)
  ((global ushort*)row)[e] = kv_f32_to_f16(x);
#elif defined(KV_CACHE_BF16)
  ((global ushort*)row)[e] = kv_f32_to_bf16(x);
#elif defined(KV_CACHE_E4M3)
  row[e] = kv_f32_to_e4m3(x / scale);  // f32 division, correctly rounded (build option)
#endif
}

inline long kv_pos(const global int* pos, long pos_offset, long pos_stride, long b) {
  return (long)pos[pos_offset + b * pos_stride];
}

// ---- kv_store: one work-group per (b, g); any work-group size ------------------------------
kernel void kv_store(const global dnnb_t* k, kv_view kv, const global dnnb_t* v, kv_view vv, const global int* pos,
                     long pos_offset, long pos_stride, global uchar* k_cache, long kc_offset, global uchar* v_cache,
                     long vc_offset, const global float* k_scale, long ks_offset, const global float* v_scale,
                     long vs_offset, kv_dims dm) {
  const long bg = get_group_id(0);
  const long b = bg / dm.kv_heads, g = bg - b * dm.kv_heads;
  const long p = kv_pos(pos, pos_offset, pos_stride, b);
  if (p < 0 || p >= dm.capacity) return;
  const long row = bg * dm.capacity + p;
  global uchar* k_row = k_cache + kc_offset + row * KV_ROW_BYTES;
  global uchar* v_row = v_cache + vc_offset + row * KV_ROW_BYTES;
  const long k_base = kv.offset + b * kv.sb + g * kv.sh, v_base = vv.offset + b * vv.sb + g * vv.sh;
  const int lid = get_local_id(0), wg = get_local_size(0);
#if defined(KV_CACHE_Q8_0)
  for (int job = lid; job < 2 * (KV_D / 32); job += wg) {  // (k or v, block)
    const bool is_v = job >= KV_D / 32;
    const int blk = is_v ? job - KV_D / 32 : job;
    float x[32];
    for (int j = 0; j < 32; ++j) {
      const long e = 32 * blk + j;
      x[j] = is_v ? DNNB_LOAD(v, v_base + e * vv.se) : DNNB_LOAD(k, k_base + e * kv.se);
    }
    kv_quantize_q8_0(x, (is_v ? v_row : k_row) + blk * 34);
  }
#else
#if defined(KV_CACHE_E4M3)
  const float ks = k_scale[ks_offset], vs = v_scale[vs_offset];
#else
  const float ks = 1.0f, vs = 1.0f;
#endif
  for (int e = lid; e < KV_D; e += wg) {
    kv_store_value(k_row, e, DNNB_LOAD(k, k_base + e * kv.se), ks);
    kv_store_value(v_row, e, DNNB_LOAD(v, v_base + e * vv.se), vs);
  }
#endif
}

// ---- kv_decode: one work-group of KV_WG items per (b, g, split) -------------------------------
// Per tile of KV_TK positions: the k rows are decoded into local memory (f32); each item scores
// keys j (j = unit % KV_TK) for a chunk of KV_HPS heads (so a key row read serves several heads,
// and the items of a warp read one head's q at once); one item per head takes the tile's max and
// the rescale factor; the scores become p = exp(s - m); then item (c4, hs, ks) = lid's digits
// (KV_D4, KV_HS, KV_KS) accumulates float4 column c4 of heads hs, hs + KV_HS, ... over keys
// ks, ks + KV_KS, ..., reading each v value straight from the cache (consecutive items take
// consecutive columns of a row; every v value is read once per head slot), and keeps its own
// sum of those p as its share of l (no serial pass over the tile for l). At the end the KV_KS
// partial sums meet in local memory and the split's (m, l, acc) go to the workspace.
kernel __attribute__((reqd_work_group_size(KV_WG, 1, 1))) void kv_decode(
    const global dnnb_t* q, kv_view qv, const global int* pos, long pos_offset, long pos_stride,
    const global uchar* k_cache, long kc_offset, const global uchar* v_cache, long vc_offset,
    const global float* k_scale, long ks_offset, const global float* v_scale, long vs_offset, global float* ws,
    kv_dims dm, float scale, float softcap) {
  local float4 q_loc[KV_G * KV_D4];
  local float4 k_tile[KV_KT4];
  local float s_tile[KV_G * KV_TK];
  local float m_loc[KV_G], a_loc[KV_G];
  local float l_part[KV_KS * KV_G];
  const int lid = get_local_id(0);
  const long group = get_group_id(0);
  const long bg = group / dm.splits, s = group - bg * dm.splits;
  const long b = bg / dm.kv_heads, g = bg - b * dm.kv_heads;
  const long p = kv_pos(pos, pos_offset, pos_stride, b);
  const long begin = max(s * dm.split_len, kv_first(dm, p));  // splits before the window: none
  if (p < 0 || p >= dm.capacity || begin > p || begin >= (s + 1) * dm.split_len) return;  // before any barrier
  const long end = min((s + 1) * dm.split_len, p + 1);
#if defined(KV_CACHE_E4M3)
  const float ksc = k_scale[ks_offset], vsc = v_scale[vs_offset];
#else
  const float ksc = 1.0f, vsc = 1.0f;
#endif
  const global uchar* k_rows = k_cache + kc_offset + bg * dm.capacity * KV_ROW_BYTES;
  const global uchar* v_rows = v_cache + vc_offset + bg * dm.capacity * KV_ROW_BYTES;

  for (int idx = lid; idx < KV_G * KV_D4; idx += KV_WG) {
    const int h = idx / KV_D4, c4 = idx - h * KV_D4;
    const long start = qv.offset + b * qv.sb + (g * KV_G + h) * qv.sh;
    q_loc[idx] = dnnb_load_cols4(q, start, qv.se, KV_D, 4 * (long)c4, 0.0f);
  }
  if (lid < KV_G) m_loc[lid] = -INFINITY;
  const int c4 = lid % KV_D4;
  const int hs = (lid / KV_D4) % KV_HS;
  const int ks = lid / (KV_D4 * KV_HS);
  float4 acc[KV_HPI];
  float lsum[KV_HPI];  // the item's share of l (sum of p) per head: the same for every column c4
  for (int r = 0; r < KV_HPI; ++r) {
    acc[r] = (float4)(0.0f);
    lsum[r] = 0.0f;
  }

  for (long j0 = begin; j0 < end; j0 += KV_TK) {
    const int nt = (int)min((long)KV_TK, end - j0);
    barrier(CLK_LOCAL_MEM_FENCE);  // q staged; the previous tile's k and p no longer read
    for (int idx = lid; idx < nt * KV_D4; idx += KV_WG) {
      const int r = idx / KV_D4, c = idx - r * KV_D4;
      k_tile[r * KV_KW4 + c] = kv_decode4(k_rows + (j0 + r) * KV_ROW_BYTES, 4 * c, ksc);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int unit = lid; unit < KV_TK * KV_NHC; unit += KV_WG) {
      const int j = unit % KV_TK, h0 = (unit / KV_TK) * KV_HPS;
      if (j >= nt) continue;
      const local float4* key = k_tile + j * KV_KW4;
      float4 dot0[KV_HPS], dot1[KV_HPS];  // two chains per head: independent fmas for a CPU item
      for (int r = 0; r < KV_HPS; ++r) dot0[r] = dot1[r] = (float4)(0.0f);
      int c = 0;
      for (; c + 2 <= KV_D4; c += 2) {
        const float4 k0 = key[c], k1 = key[c + 1];
        for (int r = 0; r < KV_HPS; ++r) {
          if (h0 + r < KV_G) {
            dot0[r] = fma(q_loc[(h0 + r) * KV_D4 + c], k0, dot0[r]);
            dot1[r] = fma(q_loc[(h0 + r) * KV_D4 + c + 1], k1, dot1[r]);
          }
        }
      }
      if (c < KV_D4) {
        for (int r = 0; r < KV_HPS; ++r)
          if (h0 + r < KV_G) dot0[r] = fma(q_loc[(h0 + r) * KV_D4 + c], key[c], dot0[r]);
      }
      for (int r = 0; r < KV_HPS; ++r) {
        if (h0 + r < KV_G) {
          const float4 t = dot0[r] + dot1[r];
#if defined(KV_SOFTCAP)
          s_tile[(h0 + r) * KV_TK + j] = softcap * tanh(scale * ((t.x + t.y) + (t.z + t.w)) / softcap);
#else
          s_tile[(h0 + r) * KV_TK + j] = scale * ((t.x + t.y) + (t.z + t.w));
#endif
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < KV_G) {
      float tile_max = -INFINITY;
      for (int j = 0; j < nt; ++j) tile_max = fmax(tile_max, s_tile[lid * KV_TK + j]);
      const float m_old = m_loc[lid];
      const float m_new = fmax(m_old, tile_max);
      a_loc[lid] = m_old == -INFINITY ? 0.0f : exp(m_old - m_new);  // 0 before the first tile
      m_loc[lid] = m_new;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = lid; idx < KV_G * KV_TK; idx += KV_WG) {
      const int h = idx / KV_TK, j = idx - h * KV_TK;
      if (j < nt) s_tile[idx] = exp(s_tile[idx] - m_loc[h]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < KV_HPI; ++r) {
      const int h = hs + KV_HS * r;
      if (h < KV_G) {
        acc[r] *= a_loc[h];
        lsum[r] *= a_loc[h];
      }
    }
    for (int j = ks; j < nt; j += KV_KS) {
      const float4 val = kv_decode4(v_rows + (j0 + j) * KV_ROW_BYTES, 4 * c4, vsc);
      for (int r = 0; r < KV_HPI; ++r) {
        const int h = hs + KV_HS * r;
        if (h < KV_G) {
          const float pj = s_tile[h * KV_TK + j];
          acc[r] = fma((float4)(pj), val, acc[r]);
          lsum[r] += pj;
        }
      }
    }
  }

  // The split's partials go to the workspace: (m, l) at ws[2 part], acc at ws[2 B H S + part D],
  // part = (b H + head) S + s. With several key slots their sums meet in local memory first
  // (acc in k_tile, no longer read: every item is past the last tile's p barrier; l in l_part
  // from the items of column 0). m_loc[h] is final since the last tile's max barrier.
  const long part0 = (b * dm.heads + g * KV_G) * dm.splits + s;  // head h: part0 + h S
  global float* acc_ws = ws + 2 * dm.batch * dm.heads * dm.splits;
#if KV_KS == 1
  for (int r = 0; r < KV_HPI; ++r) {
    const int h = hs + KV_HS * r;
    if (h < KV_G) {
      vstore4(acc[r], 0, acc_ws + (part0 + h * dm.splits) * KV_D + 4 * c4);
      if (c4 == 0) {
        ws[2 * (part0 + h * dm.splits)] = m_loc[h];
        ws[2 * (part0 + h * dm.splits) + 1] = lsum[r];
      }
    }
  }
#else
  for (int r = 0; r < KV_HPI; ++r) {
    const int h = hs + KV_HS * r;
    if (h < KV_G) {
      k_tile[(ks * KV_G + h) * KV_D4 + c4] = acc[r];
      if (c4 == 0) l_part[ks * KV_G + h] = lsum[r];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int idx = lid; idx < KV_G * KV_D4; idx += KV_WG) {
    const int h = idx / KV_D4, c = idx - h * KV_D4;
    float4 sum = k_tile[idx];
    for (int k2 = 1; k2 < KV_KS; ++k2) sum += k_tile[k2 * KV_G * KV_D4 + idx];
    vstore4(sum, 0, acc_ws + (part0 + h * dm.splits) * KV_D + 4 * c);
  }
  if (lid < KV_G) {
    float l = l_part[lid];
    for (int k2 = 1; k2 < KV_KS; ++k2) l += l_part[k2 * KV_G + lid];
    ws[2 * (part0 + lid * dm.splits)] = m_loc[lid];
    ws[2 * (part0 + lid * dm.splits) + 1] = l;
  }
#endif
}

// ---- kv_combine: one work-group per (b, head) ------------------------------------------------
// o = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s over the splits that hold positions
// (M their largest m), rounded once to the problem dtype.
kernel void kv_combine(const global int* pos, long pos_offset, long pos_stride, const global float* ws,
                       global dnnb_t* o, kv_view ov, kv_dims dm) {
  const long bh = get_group_id(0);
  const long b = bh / dm.heads, h = bh - b * dm.heads;
  const long p = kv_pos(pos, pos_offset, pos_stride, b);
  const long o_base = ov.offset + b * ov.sb + h * ov.sh;
  const int lid = get_local_id(0), wg = get_local_size(0);
  if (p < 0 || p >= dm.capacity) {
    for (int c = lid; c < KV_D4; c += wg) dnnb_store_cols4(o, o_base, ov.se, KV_D, 4 * (long)c, (float4)(NAN));
    return;
  }
  const long used = (p + dm.split_len) / dm.split_len;  // splits up to the one holding p
  const long s0 = kv_first(dm, p) / dm.split_len;        // the first holding a position read
  const global float* ml = ws + 2 * bh * dm.splits;
  const global float* acc = ws + 2 * dm.batch * dm.heads * dm.splits + bh * dm.splits * KV_D;
  float m = -INFINITY;
  for (long s = s0; s < used; ++s) m = fmax(m, ml[2 * s]);
  float l = 0.0f;
  for (long s = s0; s < used; ++s) l += ml[2 * s + 1] * exp(ml[2 * s] - m);
  for (int c = lid; c < KV_D4; c += wg) {
    float4 sum = (float4)(0.0f);
    for (long s = s0; s < used; ++s) sum = fma((float4)(exp(ml[2 * s] - m)), vload4(0, acc + s * KV_D + 4 * c), sum);
    dnnb_store_cols4(o, o_base, ov.se, KV_D, 4 * (long)c, sum / l);
  }
}
