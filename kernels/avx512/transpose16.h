// A 16 x 16 transpose of 32-bit lanes in registers, shared by the GEMM's packing (a
// row-major A or a column-major B becomes K-major panels) and the layout copies (permute's
// blocked transpose). Pure data movement: the bit pattern of every lane is kept, so the
// layout ops stay bit-exact whatever the lanes hold (f32 values, or 16-bit values widened
// to 32 bits).
#pragma once
#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

// r[i] lane j becomes r[j] lane i. Three stages: 32-bit interleave of row pairs, 64-bit
// interleave of pair pairs (each 128-bit lane L of u[4g + j] then holds element 4L + j of
// rows 4g..4g+3), and two 128-bit lane shuffles that gather the four groups.
DNNB_AVX512_INLINE void transpose16x16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    const __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  for (int j = 0; j < 4; ++j) {
    // Lanes 0 and 2 (v) or 1 and 3 (w) of groups 0-1 and of groups 2-3.
    const __m512 v01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), v23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
    const __m512 w01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xdd), w23 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xdd);
    r[j] = _mm512_shuffle_f32x4(v01, v23, 0x88);       // lane L = 0
    r[8 + j] = _mm512_shuffle_f32x4(v01, v23, 0xdd);   // lane L = 2
    r[4 + j] = _mm512_shuffle_f32x4(w01, w23, 0x88);   // lane L = 1
    r[12 + j] = _mm512_shuffle_f32x4(w01, w23, 0xdd);  // lane L = 3
  }
}

}  // namespace dnnb::avx512
