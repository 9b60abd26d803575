// matmul_f8 (torch._scaled_mm): y [M, N] = scale_a[i] * scale_b[j] * (a [M, K] @ b [K, N]) with
// a and b 8-bit floats (MM_A_FMT, MM_B_FMT: 0 f8_e4m3fn, 1 f8_e5m2), any strides, f32 scales
// (MM_ROW_SCALE: scale_a per row and scale_b per column, else one each); y in the program's
// dtype (prelude.cl's dnnb_t: bf16, f16 or f32), rows of stride ys.
// A work-group of 16 x 16 items computes a 64 x 64 tile of y, each item 4 x 4 elements (rows
// ty + 16 i, columns tx + 16 j). K runs in chunks of 16: the chunk's 64 rows of a and 64
// columns of b are decoded exactly to f32 into local memory (every 8-bit float is an f32), then
// each item accumulates the products in f32 by FMA (each product is exact: 8-bit mantissas
// give 16-bit products, so each step rounds once, as a tensor core's f32 accumulation does).
// The finish multiplies by f32(scale_a * scale_b) and rounds once to y's dtype.
#define MM_TILE 64
#define MM_TK 16

// The value of an 8-bit float code (NaN encodings give NaN, e5m2's Inf codes give Inf).
inline float mm_decode(uint c, int fmt) {
  const uint sign = (c & 0x80u) << 24;
  if (fmt == 0) {  // e4m3fn: bias 7, 3 mantissa bits, S.1111.111 NaN, no Inf
    const uint e = (c >> 3) & 15u, m = c & 7u;
    if ((c & 0x7Fu) == 0x7Fu) return as_float(sign | 0x7FC00000u);
    if (e == 0) return as_float(sign | as_uint((float)m * 0x1p-9f));
    return as_float(sign | ((e + 120u) << 23) | (m << 20));
  }
  // e5m2: bias 15, 2 mantissa bits, exponent 31 Inf (m = 0) or NaN
  const uint e = (c >> 2) & 31u, m = c & 3u;
  if (e == 31u) return as_float(sign | (m ? 0x7FC00000u : 0x7F800000u));
  if (e == 0) return as_float(sign | as_uint((float)m * 0x1p-16f));
  return as_float(sign | ((e + 112u) << 23) | (m << 21));
}

kernel void matmul_f8_tiles(const global uchar* a, long a_off, long a_rs, long a_cs,
                            const global uchar* b, long b_off, long b_rs, long b_cs,
                            const global float* scale_a, long sa_off, long sa_stride,
                            const global float* scale_b, long sb_off, long sb_stride,
                            global dnnb_t* y, long y_off, long ys, long m, long n, long k) {
  local float as[MM_TILE][MM_TK + 1];  // + 1: rows of a land in different banks
  local float bs[MM_TK][MM_TILE];
  const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  const int lid = ty * 16 + tx;
  const long row0 = (long)get_group_id(1) * MM_TILE, col0 = (long)get_group_id(0) * MM_TILE;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (long k0 = 0; k0 < k; k0 += MM_TK) {
    // 64 x 16 values of a and 16 x 64 of b: four of each per item.
    for (int t = lid; t < MM_TILE * MM_TK; t += 256) {
      const int r = t / MM_TK, s = t % MM_TK;
      const long row = row0 + r, ka = k0 + s;
      as[r][s] = row < m && ka < k ? mm_decode(a[a_off + row * a_rs + ka * a_cs], MM_A_FMT) : 0.0f;
      const int sb = t / MM_TILE, c = t % MM_TILE;
      const long col = col0 + c, kb = k0 + sb;
      bs[sb][c] = col < n && kb < k ? mm_decode(b[b_off + kb * b_rs + col * b_cs], MM_B_FMT) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 0; s < MM_TK; ++s) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = as[ty + 16 * i][s];
      for (int j = 0; j < 4; ++j) bv[j] = bs[s][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 4; ++i) {
    const long row = row0 + ty + 16 * i;
    if (row >= m) continue;
    const float sa = scale_a[sa_off + row * sa_stride];
    for (int j = 0; j < 4; ++j) {
      const long col = col0 + tx + 16 * j;
      if (col < n) {
        const float s = sa * scale_b[sb_off + col * sb_stride];
        DNNB_STORE(y, y_off + row * ys + col, acc[i][j] * s);
      }
    }
  }
}
