// rope and rope_bwd (docs/ops-family3.md, "Position"): x [B, H, S, D] (any strides) rotated pair
// by pair by the f32 angle of its position, pos [B, S] i64 or i32 (pos_i32). sign = +1 rotates by
// +angle (rope), -1 by -angle (rope_bwd, the transpose).
//
// Dim 1 runs over the B*S positions, dim 0 over the units of a row: first the pair units, each 4
// pairs (half form: columns i..i+3 and h+i..h+i+3; interleaved: columns 2i..2i+7), then the
// pass-through units, 4 columns each of rot..D. A work-item takes the cos/sin of its 4 pairs once
// (the built-in sincos, full precision and range) and applies them to the same columns of every
// head. inv_freq comes from the host (ops::rope_inv_freq), by value.
#define DNNB_ROPE_MAX_PAIRS 128
typedef struct {
  float v[DNNB_ROPE_MAX_PAIRS];
} dnnb_rope_freqs;

kernel void rope_rows(const global dnnb_t* x, long x_offset, long xb, long xh, long xs, long xc,
                      const global uchar* pos, long pos_offset, long pos_b, long pos_s, int pos_i32,
                      global dnnb_t* y, long y_offset, long yb, long yh, long ys, long yc,
                      long batch, long heads, long seq, long dim, long rot, int interleaved, float sign,
                      dnnb_rope_freqs freqs) {
  const long h = rot / 2;
  const long pair_units = (h + 3) / 4;
  const long units = pair_units + (dim - rot + 3) / 4;
  for (long ps = get_global_id(1); ps < batch * seq; ps += get_global_size(1)) {
    const long b = ps / seq, s = ps % seq;
    const long at = pos_offset + b * pos_b + s * pos_s;
    const long p = pos_i32 ? (long)((const global int*)pos)[at] : ((const global long*)pos)[at];
    const float fp = convert_float_rte(p);
    const long x0 = x_offset + b * xb + s * xs, y0 = y_offset + b * yb + s * ys;
    for (long u = get_global_id(0); u < units; u += get_global_size(0)) {
      if (u >= pair_units) {  // columns rot + 4k .. passed through
        const long c = 4 * (u - pair_units);
        for (long hd = 0; hd < heads; ++hd) {
          const long xr = x0 + hd * xh + rot * xc, yr = y0 + hd * yh + rot * yc;
          dnnb_store_cols4(y, yr, yc, dim - rot, c, dnnb_load_cols4(x, xr, xc, dim - rot, c, 0.0f));
        }
        continue;
      }
      const long i = 4 * u;
      float4 inv = (float4)(0.0f);
      inv.x = freqs.v[i];
      if (i + 1 < h) inv.y = freqs.v[i + 1];
      if (i + 2 < h) inv.z = freqs.v[i + 2];
      if (i + 3 < h) inv.w = freqs.v[i + 3];
      const float4 angle = fp * inv;  // one rounded f32 product per lane: HF's angle
      float4 c4;
      float4 s4 = sincos(angle, &c4);
      s4 *= sign;
      for (long hd = 0; hd < heads; ++hd) {
        const long xr = x0 + hd * xh, yr = y0 + hd * yh;
        if (interleaved) {
          const float8 v = (float8)(dnnb_load_cols4(x, xr, xc, rot, 2 * i, 0.0f),
                                    dnnb_load_cols4(x, xr, xc, rot, 2 * i + 4, 0.0f));
          const float4 re = v.even * c4 - v.odd * s4;
          const float4 im = v.even * s4 + v.odd * c4;
          dnnb_store_cols4(y, yr, yc, rot, 2 * i, (float4)(re.x, im.x, re.y, im.y));
          dnnb_store_cols4(y, yr, yc, rot, 2 * i + 4, (float4)(re.z, im.z, re.w, im.w));
        } else {
          const float4 a = dnnb_load_cols4(x, xr, xc, h, i, 0.0f);
          const float4 bv = dnnb_load_cols4(x, xr + h * xc, xc, h, i, 0.0f);
          dnnb_store_cols4(y, yr, yc, h, i, a * c4 - bv * s4);
          dnnb_store_cols4(y, yr + h * yc, yc, h, i, bv * c4 + a * s4);
        }
      }
    }
  }
}
