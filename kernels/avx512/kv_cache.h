// Pieces of the AVX-512 kv_cache kernel (kv_cache.cpp): the cache formats as decoders of 16
// values of a row into f32, the e4m3 NaN-code scan, the bf16 pair order, and the horizontal
// sum of four vectors at once.
//
// A decoder's load(row, c0, u) returns 16 values of the cache row that starts at byte `row`
// (vector c0 + u, in the decoder's lane order, below), exactly as the reference decodes them
// (f16 and bf16 widen exactly; e4m3 times its scale rounded once in f32; q8_0's f16 d times q,
// exact in f32).
#pragma once
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512::kv {

constexpr int64_t kBlock = 32;  // positions per block of the attention loop

// Every decoder: kStep, the vectors a score or value loop takes at once (their first index c0
// is a multiple of it); kPaired, the lane order: false, vector c holds columns 16 c + i; true,
// each 32 columns are two vectors, the even columns then the odd ones (bf16: one 64-byte load,
// then a shift or an AND, where the natural order costs a widening and a shift per vector).
// load(row, c0, u) returns vector c0 + u of the row.

struct CacheF32 {
  static constexpr int kStep = 1;
  static constexpr bool kPaired = false;
  explicit CacheF32(float = 1.0f) {}
  DNNB_AVX512_INLINE __m512 load(const char* row, int64_t c0, int u) const {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + 16 * (c0 + u));
  }
};

struct CacheF16 {
  static constexpr int kStep = 1;
  static constexpr bool kPaired = false;
  explicit CacheF16(float = 1.0f) {}
  DNNB_AVX512_INLINE __m512 load(const char* row, int64_t c0, int u) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * (c0 + u))));
  }
};

// bf16 in the natural order, for head dims that are not a multiple of 32.
struct CacheBF16 {
  static constexpr int kStep = 1;
  static constexpr bool kPaired = false;
  explicit CacheBF16(float = 1.0f) {}
  DNNB_AVX512_INLINE __m512 load(const char* row, int64_t c0, int u) const {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * (c0 + u)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

// bf16 in pairs (head dims a multiple of 32): the low half of each 32-bit word is the even
// column, shifted up it is that f32; the high half masked is the odd column's f32.
struct CacheBF16Pairs {
  static constexpr int kStep = 2;
  static constexpr bool kPaired = true;
  explicit CacheBF16Pairs(float = 1.0f) {}
  DNNB_AVX512_INLINE __m512 load(const char* row, int64_t c0, int u) const {
    const __m512i w = _mm512_loadu_si512(row + 32 * c0);
    if (u == 0) return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
};

// f8_e4m3fn through f16: the byte b = s eeee mmm becomes the f16 s 0eeee mmm0000000, whose
// value is b's times 2^-8 for normals and subnormals alike (f16's exponent bias is 8 above
// e4m3's, and both subnormal ranges line up); VCVTPH2PS widens it exactly and one multiply by
// 2^8 scale gives f32(value x scale). e4m3fn's NaN (s 1111 111) would read as 1.875 there:
// Checked sets those lanes to NaN. The kernel scans each block of rows for NaN codes first
// (has_nan_codes) and decodes with Checked only where it finds one.
template <bool Checked>
struct CacheE4M3T {
  static constexpr int kStep = 1;
  static constexpr bool kPaired = false;
  static constexpr bool kNanCodes = !Checked;  // a block may need CacheE4M3T<true>
  float mul;                                   // 2^8 scale (exact)
  explicit CacheE4M3T(float scale = 1.0f) : mul(256.0f * scale) {}
  DNNB_AVX512_INLINE __m512 load(const char* row, int64_t c0, int u) const {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * (c0 + u)));
    const __m256i w = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(b), 7),
                                       _mm256_set1_epi16(static_cast<short>(0xBFFF)));
    const __m512 x = _mm512_mul_ps(_mm512_cvtph_ps(w), _mm512_set1_ps(mul));
    if constexpr (!Checked) return x;
    const __mmask16 nan = _mm_cmpeq_epi8_mask(_mm_or_si128(b, _mm_set1_epi8(static_cast<char>(0x80))), _mm_set1_epi8(-1));
    return _mm512_mask_mov_ps(x, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  }
};
using CacheE4M3 = CacheE4M3T<false>;

// True when bytes [0, n) of p hold an e4m3fn NaN code (0x7F or 0xFF: b | 0x80 == 0xFF).
DNNB_AVX512_INLINE bool has_nan_codes(const char* p, int64_t n) {
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80)), ones = _mm512_set1_epi8(-1);
  __mmask64 any = 0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) any |= _mm512_cmpeq_epi8_mask(_mm512_or_si512(_mm512_loadu_si512(p + i), sign), ones);
  if (i < n) {
    const __mmask64 m = (1ull << (n - i)) - 1;
    any |= _mm512_mask_cmpeq_epi8_mask(m, _mm512_or_si512(_mm512_maskz_loadu_epi8(m, p + i), sign), ones);
  }
  return any != 0;
}

// q8_0: a row is D / 32 blocks of 34 bytes (f16 d, then 32 int8 q); vectors c0 and c0 + 1
// (c0 even) are the halves of block c0 / 2.
struct CacheQ8 {
  static constexpr int kStep = 2;
  static constexpr bool kPaired = false;
  explicit CacheQ8(float = 1.0f) {}
  DNNB_AVX512_INLINE __m512 load(const char* row, int64_t c0, int u) const {
    const char* block = row + (c0 >> 1) * 34;
    uint16_t d;
    std::memcpy(&d, block, sizeof d);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * u));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(_cvtsh_ss(d)));
  }
};

// True for a decoder that reads NaN codes wrong and has a checked form (CacheE4M3T).
template <class Cache, class = void>
inline constexpr bool kNanCodesOf = false;
template <class Cache>
inline constexpr bool kNanCodesOf<Cache, std::void_t<decltype(Cache::kNanCodes)>> = Cache::kNanCodes;

// Rows of n (a multiple of 32) f32 values between the natural order and CacheBF16Pairs' order.
DNNB_AVX512_INLINE void to_pairs(float* x, int64_t n) {
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 lo = _mm512_loadu_ps(x + i), hi = _mm512_loadu_ps(x + i + 16);
    _mm512_storeu_ps(x + i, _mm512_permutex2var_ps(lo, even, hi));
    _mm512_storeu_ps(x + i + 16, _mm512_permutex2var_ps(lo, odd, hi));
  }
}
DNNB_AVX512_INLINE void from_pairs(float* x, int64_t n) {
  const __m512i lo_idx = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi_idx = _mm512_add_epi32(lo_idx, _mm512_set1_epi32(8));
  for (int64_t i = 0; i < n; i += 32) {
    const __m512 even = _mm512_loadu_ps(x + i), odd = _mm512_loadu_ps(x + i + 16);
    _mm512_storeu_ps(x + i, _mm512_permutex2var_ps(even, lo_idx, odd));
    _mm512_storeu_ps(x + i + 16, _mm512_permutex2var_ps(even, hi_idx, odd));
  }
}

// The sums of the 16 lanes of a, b, c and e, in that order.
DNNB_AVX512_INLINE __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 e) {
  // Per 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3] and the same for c, e.
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 ce = _mm512_add_ps(_mm512_unpacklo_ps(c, e), _mm512_unpackhi_ps(c, e));
  // Per 128-bit lane: [a, b, c, e] partial sums.
  const __m512d abd = _mm512_castps_pd(ab), ced = _mm512_castps_pd(ce);
  const __m512 abce = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(abd, ced)),
                                    _mm512_castpd_ps(_mm512_unpackhi_pd(abd, ced)));
  // The four 128-bit lanes summed.
  const __m256 half = _mm256_add_ps(_mm512_castps512_ps256(abce), _mm512_extractf32x8_ps(abce, 1));
  return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
}

}  // namespace dnnb::avx512::kv
