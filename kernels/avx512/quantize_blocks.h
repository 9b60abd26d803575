// The block formats' codecs on AVX-512, one 32-value block at a time (two f32 vectors, element
// j in lane j % 16 of v[j / 16]), bit for bit as core/dtype.cpp's quantize_row and load_element
// (docs/ops-family4.md, "quantize_blocks", "dequantize_blocks"). Used by
// kernels/avx512/quantize_blocks.cpp and dequantize_blocks.cpp.
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/fp8_encode.h"

namespace dnnb::avx512::blocks {

// ---- Shared pieces -----------------------------------------------------------------------

DNNB_AVX512_INLINE __m512 abs_ps(__m512 v) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7FFFFFFF)));
}
// True when every lane of both vectors is finite (exponent field not all ones).
DNNB_AVX512_INLINE bool all_finite(const Vecs<2>& x) {
  const __m512i e = _mm512_set1_epi32(0x7F800000);
  const __mmask16 a = _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x.v[0]), e), e);
  const __mmask16 b = _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x.v[1]), e), e);
  return _kortestz_mask16_u8(a, b);
}
DNNB_AVX512_INLINE float block_amax(const Vecs<2>& x) {
  return _mm512_reduce_max_ps(_mm512_max_ps(abs_ps(x.v[0]), abs_ps(x.v[1])));
}
// Products and sums with an explicit rounding mode: the compiler may not fuse them into an FMA
// (ggml's reference rounds the product and the sum separately).
DNNB_AVX512_INLINE __m512 mul_rn(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
DNNB_AVX512_INLINE __m512 add_rn(__m512 a, __m512 b) {
  return _mm512_add_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// A block holding a NaN or an Inf: core/dtype.cpp's write_nan_block (NaN scale, zero elements).
inline void write_nan_block(DType dtype, uint8_t* block) {
  std::memset(block, 0, static_cast<size_t>(block_bytes(dtype)));
  if (dtype == DType::q8_0 || dtype == DType::q4_0) {
    const uint16_t nan = 0x7E00;
    std::memcpy(block, &nan, 2);
    if (dtype == DType::q4_0) std::memset(block + 2, 0x88, 16);
  } else {
    block[0] = 0xFF;
  }
}

// ---- q8_0 ----------------------------------------------------------------------------------
// d = amax / 127, id = 1 / d (0 for d = 0), q = roundf(x id) (ties away from zero: the
// truncation plus one step where the dropped fraction is at least 1/2, exact below 2^23),
// clamped to +-127 with NaN (0 x Inf) giving 0; d stored as f16, nearest even.
DNNB_AVX512_INLINE __m128i q8_0_codes(__m512 x, __m512 id) {
  const __m512 v = mul_rn(x, id);
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 up = _mm512_cmp_ps_mask(abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u))),
      _mm512_castps_si512(_mm512_set1_ps(1.0f))));
  __m512 q = _mm512_mask_add_ps(t, up, t, one);
  q = _mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));  // NaN lanes -> 127 or -127 ...
  q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_setzero_ps());  // ... made 0
  return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(q));
}
DNNB_AVX512_INLINE void quantize_q8_0(const Vecs<2>& x, uint8_t* block) {
  const float d = block_amax(x) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t dh = static_cast<uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  std::memcpy(block, &dh, 2);
  const __m512 vid = _mm512_set1_ps(id);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 2), q8_0_codes(x.v[0], vid));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 18), q8_0_codes(x.v[1], vid));
}

// ---- q4_0 ----------------------------------------------------------------------------------
// The first value of largest magnitude, with its sign, is max; d = max / -8; q =
// min(15, trunc(x id + 8.5)), 0 where x id + 8.5 is not positive (or NaN).
DNNB_AVX512_INLINE __m512i q4_0_codes(__m512 x, __m512 id) {
  const __m512 s = add_rn(mul_rn(x, id), _mm512_set1_ps(8.5f));
  __m512 q = _mm512_min_ps(_mm512_roundscale_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC), _mm512_set1_ps(15.0f));
  q = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_GT_OQ), q);
  return _mm512_cvttps_epi32(q);
}
DNNB_AVX512_INLINE void quantize_q4_0(const Vecs<2>& x, uint8_t* block) {
  const float amax = block_amax(x);
  float max = 0.0f;
  if (amax > 0.0f) {
    const __m512 a = _mm512_set1_ps(amax);
    const uint32_t hits = static_cast<uint32_t>(_mm512_cmpeq_ps_mask(abs_ps(x.v[0]), a)) |
                          (static_cast<uint32_t>(_mm512_cmpeq_ps_mask(abs_ps(x.v[1]), a)) << 16);
    const int j = __builtin_ctz(hits);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, x.v[j / 16]);
    max = lanes[j % 16];
  }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t dh = static_cast<uint16_t>(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  std::memcpy(block, &dh, 2);
  const __m512 vid = _mm512_set1_ps(id);
  const __m512i lo = q4_0_codes(x.v[0], vid), hi = q4_0_codes(x.v[1], vid);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 2),
                   _mm512_cvtepi32_epi8(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4))));
}

// ---- MX ------------------------------------------------------------------------------------
// Scale exponent floor(log2(amax)) - emax_elem from amax's exponent field, clamped to
// -127..127 (a subnormal or zero amax gives -127); x / X by VSCALEFPS (one rounding, no
// subnormal multiplier); the element encoders round to nearest even and saturate.
DNNB_AVX512_INLINE int mx_exponent(float amax, int emax_elem) {
  uint32_t bits;
  std::memcpy(&bits, &amax, 4);
  const int field = static_cast<int>(bits >> 23);  // amax >= 0 and finite
  if (field == 0) return -127;
  const int e = field - 127 - emax_elem;
  return e < -127 ? -127 : e > 127 ? 127 : e;
}

// f32 -> fp8 elements: fp8_encode.h's encode_fp8 with Top 0x7E (e4m3, saturating at 448) or
// 0x7B (e5m2, saturating at 57344: MX's clamping, where a cast gives Inf).

// f32 -> E2M1 code (4 bits in each 32-bit lane) to nearest even, saturating at 6: the count of
// rounding boundaries below |v|, a tie going to the even code (0.25 -> 0, 0.75 -> 1.0,
// 1.25 -> 1.0, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4); the sign in bit 3.
DNNB_AVX512_INLINE __m512i encode_e2m1(__m512 v) {
  const __m512 a = abs_ps(v);
  __m512i code = _mm512_setzero_si512();
  const __m512i one = _mm512_set1_epi32(1);
  auto step = [&](float bound, int predicate) DNNB_AVX512_LAMBDA {
    code = _mm512_mask_add_epi32(code, _mm512_cmp_ps_mask(a, _mm512_set1_ps(bound), predicate), code, one);
  };
  step(0.25f, _CMP_GT_OQ);
  step(0.75f, _CMP_GE_OQ);
  step(1.25f, _CMP_GT_OQ);
  step(1.75f, _CMP_GE_OQ);
  step(2.5f, _CMP_GT_OQ);
  step(3.5f, _CMP_GE_OQ);
  step(5.0f, _CMP_GT_OQ);
  const __m512i sign = _mm512_srli_epi32(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(static_cast<int>(0x80000000u))), 28);
  return _mm512_or_si512(code, sign);
}

inline int mx_emax_elem(DType dtype) { return dtype == DType::mxfp8 ? 8 : dtype == DType::mxfp8_e5m2 ? 15 : 2; }

template <DType F>
DNNB_AVX512_INLINE void quantize_mx(const Vecs<2>& x, uint8_t* block) {
  const int e = mx_exponent(block_amax(x), mx_emax_elem(F));
  block[0] = static_cast<uint8_t>(e + 127);
  const __m512 shift = _mm512_set1_ps(static_cast<float>(-e));
  const __m512 s0 = _mm512_scalef_ps(x.v[0], shift), s1 = _mm512_scalef_ps(x.v[1], shift);
  if constexpr (F == DType::mxfp4) {
    // Pairs: byte k = code(2k) | code(2k + 1) << 4. Codes of the 32 elements as 32 bytes,
    // then even and odd bytes combined.
    const __m256i c = _mm256_set_m128i(_mm512_cvtepi32_epi8(encode_e2m1(s1)), _mm512_cvtepi32_epi8(encode_e2m1(s0)));
    const __m256i even = _mm256_and_si256(c, _mm256_set1_epi16(0x00FF));
    const __m256i odd = _mm256_srli_epi16(c, 8);
    const __m256i packed16 = _mm256_or_si256(even, _mm256_slli_epi16(odd, 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 1), _mm256_cvtepi16_epi8(packed16));
  } else {
    constexpr bool e4m3 = F == DType::mxfp8;
    const __m128i c0 = e4m3 ? encode_fp8<3, 7, 0x7E>(s0) : encode_fp8<2, 15, 0x7B>(s0);
    const __m128i c1 = e4m3 ? encode_fp8<3, 7, 0x7E>(s1) : encode_fp8<2, 15, 0x7B>(s1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 1), c0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 17), c1);
  }
}

// ---- Decoders: a block to 32 f32 values (exact) ---------------------------------------------

DNNB_AVX512_INLINE float f16_scalar(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}
// e4m3fn codes (16 bytes) to f32: exponent rebiased, subnormals M x 2^-9, S.1111.111 NaN.
DNNB_AVX512_INLINE __m512 decode_e4m3(__m128i bytes) {
  const __m512i b = _mm512_cvtepu8_epi32(bytes);
  const __m512i mag = _mm512_and_si512(b, _mm512_set1_epi32(0x7F));
  const __m512i normal = _mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23));
  const __m512 subnormal = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(0x1p-9f));
  __m512i r = _mm512_mask_mov_epi32(normal, _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(8)),
                                    _mm512_castps_si512(subnormal));
  r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7F)), _mm512_set1_epi32(0x7FC00000));
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24);
  return _mm512_castsi512_ps(_mm512_or_si512(r, sign));
}
// e5m2 is the top byte of an f16.
DNNB_AVX512_INLINE __m512 decode_e5m2(__m128i bytes) {
  return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8));
}
// E2M1 codes (the low 4 bits of each 32-bit lane) by a 16-entry table.
DNNB_AVX512_INLINE __m512 decode_e2m1(__m512i codes) {
  const __m512 table = _mm512_set_ps(-6.0f, -4.0f, -3.0f, -2.0f, -1.5f, -1.0f, -0.5f, -0.0f, 6.0f, 4.0f, 3.0f, 2.0f,
                                     1.5f, 1.0f, 0.5f, 0.0f);
  return _mm512_permutexvar_ps(codes, table);
}

// The 32 values of one block. MX: element x 2^(scale - 127) by VSCALEFPS (exact, overflow to
// Inf as in f32), every value NaN for the scale 0xFF.
template <DType F>
DNNB_AVX512_INLINE Vecs<2> decode_block(const uint8_t* block) {
  Vecs<2> out;
  if constexpr (F == DType::q8_0) {
    const __m512 d = _mm512_set1_ps(f16_scalar(block));
    for (int h = 0; h < 2; ++h) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2 + 16 * h));
      out.v[h] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
    }
  } else if constexpr (F == DType::q4_0) {
    const __m512 d = _mm512_set1_ps(f16_scalar(block));
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2)));
    const __m512i eight = _mm512_set1_epi32(8);
    out.v[0] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_and_si512(b, _mm512_set1_epi32(15)), eight)), d);
    out.v[1] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_srli_epi32(b, 4), eight)), d);
  } else {
    if (block[0] == 0xFF) {
      out.v[0] = out.v[1] = _mm512_set1_ps(__builtin_nanf(""));
      return out;
    }
    const __m512 e = _mm512_set1_ps(static_cast<float>(static_cast<int>(block[0]) - 127));
    if constexpr (F == DType::mxfp4) {
      // Byte k holds elements 2k (low nibble) and 2k + 1: bytes 0..7 feed v[0], 8..15 v[1].
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 1)));
      const __m512i lo = _mm512_and_si512(b, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(b, 4);
      // Interleave: element 2k is lo[k], 2k + 1 is hi[k].
      const __m512i idx_a = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      const __m512i idx_b = _mm512_add_epi32(idx_a, _mm512_set1_epi32(8));
      out.v[0] = _mm512_scalef_ps(decode_e2m1(_mm512_permutex2var_epi32(lo, idx_a, hi)), e);
      out.v[1] = _mm512_scalef_ps(decode_e2m1(_mm512_permutex2var_epi32(lo, idx_b, hi)), e);
    } else {
      for (int h = 0; h < 2; ++h) {
        const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 1 + 16 * h));
        out.v[h] = _mm512_scalef_ps(F == DType::mxfp8 ? decode_e4m3(q) : decode_e5m2(q), e);
      }
    }
  }
  return out;
}

// f(std::integral_constant<DType, F>{}) for the block format `dtype`.
template <class Fn>
Status with_block_format(DType dtype, Fn&& f) {
  switch (dtype) {
    case DType::q8_0: return f(std::integral_constant<DType, DType::q8_0>{});
    case DType::q4_0: return f(std::integral_constant<DType, DType::q4_0>{});
    case DType::mxfp8: return f(std::integral_constant<DType, DType::mxfp8>{});
    case DType::mxfp8_e5m2: return f(std::integral_constant<DType, DType::mxfp8_e5m2>{});
    case DType::mxfp4: return f(std::integral_constant<DType, DType::mxfp4>{});
    default: return Status::unsupported(std::string("avx512: ") + dtype_name(dtype) + " is not a block format");
  }
}

// True when the view reads element i of its logical shape from offset i (rows of whole blocks).
inline bool dense(const Tensor& t) {
  const Shape strides = contiguous_strides(t.shape);
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] > 1 && t.strides[d] != strides[d]) return false;
  return true;
}

}  // namespace dnnb::avx512::blocks
