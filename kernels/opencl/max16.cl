// 16-bit max over the last dim on the storage bits (max16_keys: the f16/bf16 max). Placed after
// max.cl, row_body.cl and reduce_body.cl.
//
// Why: reduce_chunks' combine, dnnb_vmax2 (a vector select on an isnan compare or-ed with a
// compare), lowers on NVIDIA to ~5 instructions per lane after the conversion, so a 16-bit max
// costs ~6 instructions per element where sum pays one add: the max could not keep up with the
// memory at half the bytes per element of f32.
//
// Here no element is converted. f16 and bf16 are both sign-magnitude, so for two values of one
// sign their bits order like the values (a larger magnitude is larger if positive, smaller if
// negative). A 32-bit word holds two values; the high one is compared as the word itself (the
// low half only breaks ties between equal high halves) and the low one as the word shifted up by
// 16, so each value sits in the top 16 bits of an int. Per value, three integer min/max:
//   smax (signed max): if any value is >= +0, the largest of those (NaN > inf in bits, so a
//                      positive NaN wins);
//   smin (signed min): if all are negative, the one of least magnitude, i.e. the max;
//   umax (unsigned max): if any value is negative, the one of greatest magnitude (a negative NaN
//                      wins); it catches the negative NaNs that smax hides behind a positive.
// The max is NaN if smax or umax holds a NaN (each holds an actual input), else smax if >= 0,
// else smin: 3.5 integer ops per element (a shift per word, three min/max per value), exact.
// Fill past the row end: -inf, which changes none of the three unless every value is -inf.
#if DNNB_VW == 8
#if defined(DNNB_BF16)
#define DNNB_INF16 0x7f80u
#define DNNB_QNAN16 0x7fc0u
#else
#define DNNB_INF16 0x7c00u
#define DNNB_QNAN16 0x7e00u
#endif
#define DNNB_NEG_INF16 (0x8000u | DNNB_INF16)
// Chunk c..c+7 of `row` as its bits; columns at or past `cols` read as -inf (never touched).
inline uint4 dnnb_bits16_part(const global dnnb_t* row, int c, int cols) {
  if (c + 8 <= cols) return dnnb_vload_bits(row + c);
  uint h[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) h[j] = c + j < cols ? (uint)dnnb_load_bits(row, c + j) : DNNB_NEG_INF16;
  return (uint4)(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

// One word (two values) into the three accumulators.
#define DNNB_MAX16_WORD(w)                                   \
  do {                                                       \
    const uint hi_ = (w), lo_ = (w) << 16;                   \
    smax = max(smax, max((int)hi_, (int)lo_));               \
    smin = min(smin, min((int)hi_, (int)lo_));               \
    umax = max(umax, max(hi_, lo_));                         \
  } while (0)

// The 16-bit value in the top half of an accumulator is a NaN.
inline bool dnnb_top16_nan(uint v) { return ((v >> 16) & 0x7fffu) > DNNB_INF16; }

// x rows at x_off + r * x_rs (unit column stride), y[r] at y_off + r * y_rs: the host takes this
// kernel for views with at most one outer dim, so a row start is one multiply (dnnb_row_start's
// 64-bit % and / per row are a division call each on NVIDIA).
DNNB_ROW_KERNEL void max16_keys(const global dnnb_t* x, long x_off, long x_rs, global dnnb_t* y, long y_off,
                                long y_rs, long rows, int cols) {
  local float scratch[DNNB_ROW_SCRATCH];
  const int step = DNNB_ROW_WG * 8;
  for (long r = get_group_id(0); r < rows; r += get_num_groups(0)) {
    const global dnnb_t* xrow = x + x_off + r * x_rs;
    int smax = INT_MIN, smin = INT_MAX;
    uint umax = 0;
    for (int c = dnnb_chunk_col(0); c < cols; c += DNNB_REDUCE_DEPTH * step) {
      // All loads of the step before any use (constant indices after unrolling: registers).
      uint4 w[DNNB_REDUCE_DEPTH];
      if (DNNB_ROW_EXACT || c + (DNNB_REDUCE_DEPTH - 1) * step + 8 <= cols) {
#pragma unroll
        for (int j = 0; j < DNNB_REDUCE_DEPTH; ++j) w[j] = dnnb_vload_bits(xrow + c + j * step);
      } else {
#pragma unroll
        for (int j = 0; j < DNNB_REDUCE_DEPTH; ++j) w[j] = dnnb_bits16_part(xrow, c + j * step, cols);
      }
#pragma unroll
      for (int j = 0; j < DNNB_REDUCE_DEPTH; ++j) {
        DNNB_MAX16_WORD(w[j].x);
        DNNB_MAX16_WORD(w[j].y);
        DNNB_MAX16_WORD(w[j].z);
        DNNB_MAX16_WORD(w[j].w);
      }
    }
    // This work-item's max as an ordered key, exact in a float: -32768..32767 for the values
    // (-m - 1 for a negative of magnitude m, so -0 < +0), 32768 for NaN, -32769 for an item with
    // no column (rows shorter than the work-group's first step); then the row's two-level
    // reduction (row_body.cl) and back to bits.
    const uint best = (uint)(smax >= 0 ? smax : smin) >> 16;
    const int key = dnnb_chunk_col(0) >= cols                              ? -32769
                    : dnnb_top16_nan((uint)smax) || dnnb_top16_nan(umax) ? 32768
                    : (best & 0x8000u)                                     ? -(int)(best & 0x7fffu) - 1
                                                                           : (int)best;
    const int total = (int)dnnb_row_wg_max((float)key, scratch);
    if (get_local_id(0) == 0) {
      const uint bits = total == 32768 ? DNNB_QNAN16 : total >= 0 ? (uint)total : 0x8000u | (uint)(-total - 1);
      ((global ushort*)y)[y_off + r * y_rs] = (ushort)bits;
    }
  }
}
#endif
