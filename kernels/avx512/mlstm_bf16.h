// The bf16 products of the AVX-512 mLSTM forward kernels: VDPBF16PS (two bf16 products summed
// into an f32 lane per instruction, twice the f32 FMA's rate) on operands packed as pairs.
//
// A pair word holds two bf16 values of consecutive k (the reduction index): the low half k = 2p,
// the high half 2p + 1 (0 past the end). C[r][c] (+)= sum_p A(r, p) . B(p, c) with A(r, p) a
// word broadcast to every lane and B's row p holding the words of 16 lanes c per vector.
// q and k of a bf16 problem are used as stored (the products are exact in f32); C~ and the
// chunkwise form's states (C, abar k) are rounded to bf16 for their products, the roundings the
// torch bf16 graph makes (C~ before C~ v) and the bounds allow (docs/numerics.md, "mLSTM").
// Used only where the CPU has AVX512_BF16 (has_native_bf16); f32 and f16 problems keep f32 FMAs.
#pragma once
#include "kernels/avx512/sdpa_tile.h"

namespace dnnb::avx512::mlstm {

// Rows [0, R) and vectors [0, NV) of C (row stride ldc) (+)= A B over kn pair steps, A(r, p) =
// a[r a_row + p a_k], B's rows ldb words apart (the f32 gemm_tile of sdpa_tile.h on pairs).
template <int R, int NV>
DNNB_AVX512_INLINE void pair_tile(float* c, int64_t ldc, const uint32_t* a, int64_t a_row, int64_t a_k,
                                  const uint32_t* b, int64_t ldb, int64_t kn, bool accumulate) {
  __m512 acc[R][NV];
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v)
      acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kn; ++k) {
    __m512bh bv[NV];
    _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) bv[v] =
        reinterpret_cast<__m512bh>(_mm512_loadu_si512(b + k * ldb + 16 * v));
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[r * a_row + k * a_k])));
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

template <int R>
DNNB_AVX512_INLINE void pair_rows(int nv, float* c, int64_t ldc, const uint32_t* a, int64_t a_row, int64_t a_k,
                                  const uint32_t* b, int64_t ldb, int64_t kn, bool accumulate) {
  switch (nv) {
    case 4: return pair_tile<R, 4>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
    case 3: return pair_tile<R, 3>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
    case 2: return pair_tile<R, 2>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
    default: return pair_tile<R, 1>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
  }
}

// C[m x 16 nvec] (+)= A[m x kn pairs] B[kn pairs x 16 nvec]: sdpa::gemm's tiling on pairs.
DNNB_AVX512 inline void pair_gemm(float* c, int64_t ldc, int64_t m, int64_t nvec, const uint32_t* a, int64_t a_row,
                                  int64_t a_k, const uint32_t* b, int64_t ldb, int64_t kn, bool accumulate) {
  if (kn == 0 && accumulate) return;
  for (int64_t v0 = 0; v0 < nvec; v0 += 4) {
    const int nv = static_cast<int>(std::min<int64_t>(4, nvec - v0));
    float* cv = c + 16 * v0;
    const uint32_t* bv = b + 16 * v0;
    int64_t r = 0;
    for (; r + 6 <= m; r += 6) pair_rows<6>(nv, cv + r * ldc, ldc, a + r * a_row, a_row, a_k, bv, ldb, kn, accumulate);
    for (; r + 2 <= m; r += 2) pair_rows<2>(nv, cv + r * ldc, ldc, a + r * a_row, a_row, a_k, bv, ldb, kn, accumulate);
    for (; r < m; ++r) pair_rows<1>(nv, cv + r * ldc, ldc, a + r * a_row, a_row, a_k, bv, ldb, kn, accumulate);
  }
}

// ---- Packing ---------------------------------------------------------------------------

// The word order that interleaves lanes 0-15 of x (low half) with lanes 16-31 (high half):
// word j = (x[j], x[16 + j]).
DNNB_AVX512_INLINE __m512i interleave_halves(__m512i x) {
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                       5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(idx, x);
}

// out[c] = (bf16(r0[c]), bf16(r1[c])) for c < n (a multiple of 16); r1 null: high halves 0.
// Rounded to nearest even by VCVTNE2PS2BF16 (its flush of f32 subnormals to 0 changes a
// value by under 1.2e-38).
DNNB_AVX512 inline void pairs_from_f32(const float* r0, const float* r1, int64_t n, uint32_t* out) {
  for (int64_t c = 0; c < n; c += 16) {
    const __m512 hi = r1 != nullptr ? _mm512_loadu_ps(r1 + c) : _mm512_setzero_ps();
    const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, _mm512_loadu_ps(r0 + c)));
    _mm512_storeu_si512(out + c, interleave_halves(both));
  }
}

// out[c] = (r0[c], r1[c]) for c < n, zeros up to `padded` (a multiple of 16): two bf16 rows of
// element stride `stride` (r1 null: high halves 0).
DNNB_AVX512 inline void pairs_from_bf16(const uint16_t* r0, const uint16_t* r1, int64_t stride, int64_t n,
                                        int64_t padded, uint32_t* out) {
  int64_t c = 0;
  if (stride == 1) {
    for (; c + 16 <= n; c += 16) {
      const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0 + c));
      const __m256i hi = r1 != nullptr ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1 + c)) : _mm256_setzero_si256();
      _mm512_storeu_si512(out + c, interleave_halves(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)));
    }
  }
  for (; c < n; ++c)
    out[c] = static_cast<uint32_t>(r0[c * stride]) | (r1 != nullptr ? static_cast<uint32_t>(r1[c * stride]) << 16 : 0u);
  for (; c < padded; ++c) out[c] = 0;
}

// The pairs of one bf16 row along its own elements: out[p] = (row[2p], row[2p + 1]), p < (n + 1) / 2.
DNNB_AVX512 inline void row_pairs(const uint16_t* row, int64_t stride, int64_t n, uint32_t* out) {
  const int64_t words = (n + 1) / 2;
  if (stride == 1 && n % 2 == 0) {
    std::memcpy(out, row, static_cast<size_t>(n) * 2);
    return;
  }
  for (int64_t p = 0; p < words; ++p) {
    const uint32_t lo = row[2 * p * stride], hi = 2 * p + 1 < n ? row[(2 * p + 1) * stride] : 0u;
    out[p] = lo | (hi << 16);
  }
}

// Queries [r0, r0 + n) of (b, h) as transposed pairs: panel[p * kBlock + i] = the pair p of
// query i (lanes i >= n zero), through `scratch` (kBlock rows of (dim + 1) / 2 words).
DNNB_AVX512 inline void query_pairs(const sdpa::View& t, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t dim,
                        uint32_t* scratch, uint32_t* panel) {
  const int64_t words = (dim + 1) / 2;
  for (int64_t i = 0; i < n; ++i) row_pairs(t.row<const uint16_t>(b, h, r0 + i), t.col_stride(), dim, scratch + i * words);
  for (int64_t p = 0; p < words; ++p) {
    for (int64_t i = 0; i < n; ++i) panel[p * sdpa::kBlock + i] = scratch[i * words + p];
    for (int64_t i = n; i < sdpa::kBlock; ++i) panel[p * sdpa::kBlock + i] = 0;
  }
}

}  // namespace dnnb::avx512::mlstm
