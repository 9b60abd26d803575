// f32 -> fp8 encoders shared by the AVX-512 cast (every fp8 target) and the MX block quantiser
// (its fp8 elements after scaling).
#pragma once
#include <cstdint>

#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

// The input's sign moved to bit `to` of each 32-bit lane.
DNNB_AVX512_INLINE __m512i sign_at(__m512 v, int to) {
  const __m512i s = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  return _mm512_srl_epi32(s, _mm_cvtsi32_si128(31 - to));
}

// f32 -> fp8, round to nearest even, in integers and one exact f32 add (M mantissa bits, bias
// B, smallest normal exponent 1 - B; `top` is the code overflow and Inf give: e4m3fn 0x7E (+-448,
// saturating), e5m2 0x7C (Inf) in a cast, 0x7B (+-57344) in an MX block). On |x| (bits a):
//  - normal in the target (a >= 2^(1-B)): rebias the exponent (a + (B - 127) << 23), then add
//    half an ulp less one plus the lowest kept bit and shift: round to nearest even, a carry
//    moving into the exponent as the encoding needs;
//  - below the smallest normal: |x| + 2^(1-B-M+23), an f32 whose ulp is the target's quantum
//    2^(1-B-M), so the add itself rounds |x| to nearest even (an explicit rounding mode, not the
//    MXCSR's) and the quanta counted are the sum's low bits (code = bits(sum) - bits(2^k)); a
//    count of 2^M is the smallest normal. (An f32 subnormal |x| gives 0 whether or not DAZ flushes it.)
//  - codes past `top` (finite overflow, and Inf through the normal path) become `top`;
//  - NaN: 0x7F. The sign (bit 7) is ORed in last.
template <int M, int B, uint32_t Top>
DNNB_AVX512_INLINE __m128i encode_fp8(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i a = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(a, 23 - M), _mm512_set1_epi32(1));
  const __m512i biased = _mm512_add_epi32(a, _mm512_set1_epi32(((B - 127) << 23) + (1 << (22 - M)) - 1));
  const __m512i normal = _mm512_srli_epi32(_mm512_add_epi32(biased, lsb), 23 - M);
  constexpr int kMagic = (1 - B - M + 23 + 127) << 23;
  const __m512 sum = _mm512_add_round_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(_mm512_set1_epi32(kMagic)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i small = _mm512_sub_epi32(_mm512_castps_si512(sum), _mm512_set1_epi32(kMagic));
  const __mmask16 is_small = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32((1 - B + 127) << 23));
  __m512i code = _mm512_mask_mov_epi32(normal, is_small, small);
  code = _mm512_min_epu32(code, _mm512_set1_epi32(static_cast<int>(Top)));
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7F800000));
  code = _mm512_mask_mov_epi32(code, is_nan, _mm512_set1_epi32(0x7F));
  return _mm512_cvtepi32_epi8(_mm512_or_si512(code, sign_at(v, 7)));
}

}  // namespace dnnb::avx512
