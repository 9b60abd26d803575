// The block formats' codecs on CUDA (kernels/cuda/quantize_blocks.cu, dequantize_blocks.cu), bit
// for bit as core/dtype.cpp's quantize_row and load_element (docs/ops-family4.md,
// "quantize_blocks"). A block's 32 values are held by a group of L consecutive lanes of a warp,
// G = 32 / L values a lane (lane k of the group: values kG .. kG + G - 1); the group agrees on
// the block's amax (and q4_0's signed maximum) through shuffles of width L (block_head, or
// encode_piece's integer maxima), then each lane encodes its own values. Decoding: decode_value
// (one value) and decode_piece (a lane's G values from aligned words). The element encoders and
// decoders are cast.cuh's (cast_detail).
#pragma once
#include <cstdint>

#include "kernels/cuda/cast.cuh"

namespace dnnb::cuda_kernels::blocks {

using cast_detail::as_bits;
using cast_detail::as_float;

// Block formats as template arguments.
enum Format : int { kQ8_0, kQ4_0, kMxE4M3, kMxE2M1, kMxE5M2 };

template <int F>
inline constexpr int kBlockBytes = F == kQ8_0 ? 34 : F == kQ4_0 ? 18 : F == kMxE2M1 ? 17 : 33;
// Bytes of one lane's G values in the block (q4_0: the low-nibble lanes write pairs, below).
template <int F>
inline constexpr int kScaleBytes = F == kQ8_0 || F == kQ4_0 ? 2 : 1;
template <int F>
inline constexpr int kEmaxElem = F == kMxE4M3 ? 8 : F == kMxE5M2 ? 15 : 2;

// 2^e for e in -127..127, exact (2^-127 is the f32 subnormal 0x00400000; nothing here flushes).
__device__ __forceinline__ float pow2(int e) {
  return e >= -126 ? __uint_as_float(static_cast<uint32_t>(e + 127) << 23) : __uint_as_float(0x00400000u);
}

// E2M1 code of f32 v to nearest even, saturating at 6, sign in bit 3 (core's f32_to_f4_e2m1):
// the rounding boundaries below |v|, ties to the even code.
// That is the narrow encoder with one mantissa bit and bias 1 (the boundaries 0.25, 0.75, 1.25,
// 1.75, 2.5, 3.5 and 5 are its ties: 0.25 and 0.75 to the even subnormal codes by the magic add,
// the rest by the rounding add), top code 7; NaN (never encoded: a block holding one is zeroed) 0.
__device__ __forceinline__ uint32_t encode_e2m1(float v) {
  return cast_detail::encode_narrow<1, 1, 7u, 0u, 3>(__float_as_uint(v));
}
__device__ __forceinline__ float decode_e2m1(uint32_t c) {
  const uint32_t m = c & 7u;
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6: m < 2 subnormal (m x 0.5), else (2 + (m & 1)) x 2^((m >> 1) - 2).
  const float v = m < 2 ? 0.5f * static_cast<float>(m) : __uint_as_float(((m >> 1) + 126u) << 23) * (1.0f + 0.5f * (m & 1));
  return (c & 8u) ? -v : v;
}

// q8_0's code of v (its byte, the int8 in the low 8 bits): round(v / d), half away from zero,
// with id = 1 / d (0 for d = 0), clamped to -127..127 (NaN, from 0 x Inf: 0).
__device__ __forceinline__ uint32_t q8_code(float v, float id) {
  const float q = roundf(__fmul_rn(v, id));
  const int c = isnan(q) ? 0 : static_cast<int>(fminf(fmaxf(q, -127.0f), 127.0f));
  return static_cast<uint32_t>(c) & 0xFFu;
}
// q4_0's nibble of v: (int)(v / d + 8.5) as ggml's C (product and sum rounded apart), 0..15.
__device__ __forceinline__ uint32_t q4_code(float v, float id) {
  const float s = __fadd_rn(__fmul_rn(v, id), 8.5f);
  return !(s > 0.0f) ? 0u : s >= 15.0f ? 15u : static_cast<uint32_t>(s);
}

// What a group agrees on for one block.
struct BlockHead {
  bool finite = true;
  float amax = 0.0f;
  float max = 0.0f;  // q4_0: the first value of largest magnitude, with its sign
};

// Group-wide head of L lanes (every lane of the warp calls it; lanes of blocks past the end
// pass zeros). Each lane gives its G values and the index of its first value in the block.
template <int L, int G>
__device__ __forceinline__ BlockHead block_head(const float (&v)[G], int first_index) {
  BlockHead h;
  int index = 64;
#pragma unroll
  for (int i = 0; i < G; ++i) {
    h.finite = h.finite && isfinite(v[i]);
    if (h.amax < fabsf(v[i])) {  // strictly larger: the first of equal magnitudes stays
      h.amax = fabsf(v[i]);
      h.max = v[i];
      index = first_index + i;
    }
  }
#pragma unroll
  for (int off = L / 2; off > 0; off /= 2) {
    const float other_amax = __shfl_xor_sync(0xFFFFFFFFu, h.amax, off, L);
    const float other_max = __shfl_xor_sync(0xFFFFFFFFu, h.max, off, L);
    const int other_index = __shfl_xor_sync(0xFFFFFFFFu, index, off, L);
    const int other_finite = __shfl_xor_sync(0xFFFFFFFFu, static_cast<int>(h.finite), off, L);
    h.finite = h.finite && other_finite;
    if (other_amax > h.amax || (other_amax == h.amax && other_index < index)) {
      h.amax = other_amax;
      h.max = other_max;
      index = other_index;
    }
  }
  return h;
}

// One lane's part of a block: the codes of its G values into `out` (the block's bytes, in
// shared or global memory), the scale by lane 0 of the group. `k` is the lane's index in the
// group. q4_0: lanes k < L / 2 write bytes kG .. kG + G - 1 (values j and j + 16), taking the
// high nibbles from lane k + L / 2 (every lane of the warp must call this).
template <int F, int L, int G>
__device__ __forceinline__ void encode_lane(const float (&v)[G], const BlockHead& h, int k, uint8_t* out) {
  if constexpr (F == kQ8_0) {
    const float d = h.amax / 127.0f;                 // IEEE division (nvcc's default -prec-div=true)
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (k == 0) {
      const uint16_t dh = h.finite ? __half_as_ushort(__float2half_rn(d)) : uint16_t{0x7E00};
      out[0] = static_cast<uint8_t>(dh);
      out[1] = static_cast<uint8_t>(dh >> 8);
    }
#pragma unroll
    for (int i = 0; i < G; ++i) out[2 + k * G + i] = h.finite ? static_cast<uint8_t>(q8_code(v[i], id)) : uint8_t{0};
  } else if constexpr (F == kQ4_0) {
    const float d = h.max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (k == 0) {
      const uint16_t dh = h.finite ? __half_as_ushort(__float2half_rn(d)) : uint16_t{0x7E00};
      out[0] = static_cast<uint8_t>(dh);
      out[1] = static_cast<uint8_t>(dh >> 8);
    }
    uint32_t nibbles = 0;  // value i in bits 4i
#pragma unroll
    for (int i = 0; i < G; ++i) {
      nibbles |= (h.finite ? q4_code(v[i], id) : 8u) << (4 * i);
    }
    const uint32_t high = __shfl_down_sync(0xFFFFFFFFu, nibbles, L / 2, L);
    if (k < L / 2) {
#pragma unroll
      for (int i = 0; i < G; ++i)
        out[2 + k * G + i] = static_cast<uint8_t>(((nibbles >> (4 * i)) & 15u) | (((high >> (4 * i)) & 15u) << 4));
    }
  } else {
    // OCP MX: X = 2^(floor(log2(amax)) - emax_elem) clamped to 2^-127..2^127 (amax 0 or an f32
    // subnormal: 2^-127); elements x / X (exact, or one rounding into f32's subnormals) to the
    // element format, nearest even, saturating.
    const int field = static_cast<int>(__float_as_uint(h.amax) >> 23);
    const int e = field == 0 ? -127 : min(max(field - 127 - kEmaxElem<F>, -127), 127);
    if (k == 0) out[0] = h.finite ? static_cast<uint8_t>(e + 127) : uint8_t{0xFF};
    const float inv = pow2(-e);
    if constexpr (F == kMxE2M1) {
#pragma unroll
      for (int i = 0; i < G; i += 2) {
        const uint32_t lo = encode_e2m1(__fmul_rn(v[i], inv)), hi = encode_e2m1(__fmul_rn(v[i + 1], inv));
        out[1 + (k * G + i) / 2] = h.finite ? static_cast<uint8_t>(lo | (hi << 4)) : uint8_t{0};
      }
    } else {
#pragma unroll
      for (int i = 0; i < G; ++i) {
        const uint32_t bits = as_bits(__fmul_rn(v[i], inv));
        const uint32_t c = F == kMxE4M3 ? cast_detail::encode_narrow<3, 7, 0x7Eu, 0x7Fu, 7>(bits)
                                        : cast_detail::encode_narrow<2, 15, 0x7Bu, 0x7Fu, 7>(bits);  // 57344
        out[1 + k * G + i] = h.finite ? static_cast<uint8_t>(c) : uint8_t{0};
      }
    }
  }
}

// The warp-tile quantiser's part of a block (quantize_blocks.cu, quantize_warp_kernel): a lane
// holds G values (f32 bits: `bits`, exact), lane k of a group of L; every lane of the warp calls
// it. The group agrees on the block by integer maxima of the magnitudes' bits (the order of
// finite non-negative f32s; NaN and Inf lie above 0x7F800000, so one maximum also says whether
// the block is finite) over log2(L) shuffles; q4_0's signed maximum is the first value of that
// magnitude: the least (index, sign) key of the group. Codes go to `block` (the block's bytes in
// shared memory) as encode_lane writes them: q8_0 and q4_0 by 16-bit stores (their codes start
// at an even offset of an even-sized block), the MX formats byte by byte.
template <int L>
__device__ __forceinline__ uint32_t group_max(uint32_t m) {
#pragma unroll
  for (int off = L / 2; off > 0; off /= 2) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, off, L));
  return m;
}
template <int L>
__device__ __forceinline__ uint32_t group_min(uint32_t m) {
#pragma unroll
  for (int off = L / 2; off > 0; off /= 2) m = min(m, __shfl_xor_sync(0xFFFFFFFFu, m, off, L));
  return m;
}

// Two scaled MX values (|v| < 8, finite; from a 16-bit source, so exact in f16 from 2^-14 up) to
// E2M1, lo in bits 0-3 and hi in 4-7, by f16x2 arithmetic: cvt.rn.f16x2.f32 (exact for them;
// below 2^-14 it may round, and such values encode as +-0 either way), c = min(|h|, 6) (6 and
// everything above 5 encode as 7), then c rounded to the E2M1 grid by one add of a magic number
// whose f16 ulp is the grid's step in c's binade (512: 0.5 below 2; 1024: 1 in [2, 4); 2048: 2
// from 4; from c's exponent field, at least 1.0's, moved up by 9 binades), which rounds to
// nearest even as the encoder does; the code is the sum's low bits, plus 2 for each binade past
// [1, 2). About 6 instructions a value for encode_e2m1's 13; equal to it for every bf16 and f16
// value under every E8M0 scale (this function compiled for the host from cuda_fp16.h). Not for
// f32 sources: their rounding to f16 could move a value onto a boundary.
__device__ __forceinline__ uint32_t e2m1x2_f16(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  const __half2 c = __hmin2(__habs2(h), __float2half2_rn(6.0f));
  uint32_t cb, hb, eb, mb, rb;
  memcpy(&cb, &c, 4);
  memcpy(&hb, &h, 4);
  eb = cb & 0x7C007C00u;  // c's binade as an f16 power of two
  __half2 e;
  memcpy(&e, &eb, 4);
  e = __hmax2(e, __float2half2_rn(1.0f));
  memcpy(&eb, &e, 4);
  mb = eb + 0x24002400u;  // 2^9 times it: 512, 1024 or 2048
  __half2 m;
  memcpy(&m, &mb, 4);
  const __half2 r = __hadd2(c, m);
  memcpy(&rb, &r, 4);
  const uint32_t code = rb - mb + ((eb - 0x3C003C00u) >> 9);  // each half: no borrow, no carry
  const uint32_t both = code | ((hb >> 12) & 0x00080008u);     // lo code bits 0-3, hi 16-19; signs
  return (both | (both >> 12)) & 0xFFu;
}

// kCvt: E2M1 by e2m1x2_f16 (16-bit sources only).
template <int F, int L, int G, bool kCvt = false>
__device__ __forceinline__ void encode_piece(const uint32_t (&bits)[G], int k, uint8_t* block) {
  uint32_t m = 0;
#pragma unroll
  for (int i = 0; i < G; ++i) m = max(m, bits[i] & 0x7FFFFFFFu);
  m = group_max<L>(m);
  const bool finite = m < 0x7F800000u;
  const float amax = __uint_as_float(m);
  if constexpr (F == kQ8_0 || F == kQ4_0) {
    float d;
    if constexpr (F == kQ8_0) {
      d = amax / 127.0f;  // IEEE division (nvcc's default -prec-div=true)
    } else {
      uint32_t key = 0xFFFFFFFFu;  // (index in the block) x 2 + sign of the first value of magnitude m
#pragma unroll
      for (int i = G - 1; i >= 0; --i)
        if ((bits[i] & 0x7FFFFFFFu) == m) key = static_cast<uint32_t>(k * G + i) << 1 | bits[i] >> 31;
      key = group_min<L>(key);
      // ggml's max starts at +0 and changes only for a larger magnitude: +0 for an all-zero block.
      const float max = m == 0 ? 0.0f : (key & 1u) ? -amax : amax;
      d = max / -8.0f;
    }
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (k == 0)
      *reinterpret_cast<uint16_t*>(block) = finite ? __half_as_ushort(__float2half_rn(d)) : uint16_t{0x7E00};
    if constexpr (F == kQ8_0) {
#pragma unroll
      for (int i = 0; i < G; i += 2) {
        const uint32_t pair = q8_code(__uint_as_float(bits[i]), id) | q8_code(__uint_as_float(bits[i + 1]), id) << 8;
        *reinterpret_cast<uint16_t*>(block + 2 + k * G + i) = finite ? static_cast<uint16_t>(pair) : uint16_t{0};
      }
    } else {
      uint32_t nibbles = 0;  // value i in bits 4i
#pragma unroll
      for (int i = 0; i < G; ++i) nibbles |= q4_code(__uint_as_float(bits[i]), id) << (4 * i);
      nibbles = finite ? nibbles : 0x88888888u;
      // Lanes k < L / 2 hold values j, lanes k + L / 2 values j + 16: byte j is j | (j + 16) << 4.
      const uint32_t high = __shfl_down_sync(0xFFFFFFFFu, nibbles, L / 2, L);
      if (k < L / 2) {
#pragma unroll
        for (int i = 0; i < G; i += 2) {
          const uint32_t lo = (nibbles >> (4 * i)) & 15u, lo1 = (nibbles >> (4 * i + 4)) & 15u;
          const uint32_t hi = (high >> (4 * i)) & 15u, hi1 = (high >> (4 * i + 4)) & 15u;
          *reinterpret_cast<uint16_t*>(block + 2 + k * G + i) = static_cast<uint16_t>(lo | hi << 4 | lo1 << 8 | hi1 << 12);
        }
      }
    }
  } else {
    // OCP MX, as encode_lane: the scale's exponent from amax's exponent field.
    const int field = static_cast<int>(m >> 23);
    const int e = field == 0 ? -127 : min(max(field - 127 - kEmaxElem<F>, -127), 127);
    if (k == 0) block[0] = finite ? static_cast<uint8_t>(e + 127) : uint8_t{0xFF};
    const float inv = pow2(-e);
    if constexpr (F == kMxE2M1) {
#pragma unroll
      for (int i = 0; i < G; i += 2) {
        const float lo = __fmul_rn(__uint_as_float(bits[i]), inv), hi = __fmul_rn(__uint_as_float(bits[i + 1]), inv);
        const uint32_t pair = kCvt ? e2m1x2_f16(lo, hi) : encode_e2m1(lo) | encode_e2m1(hi) << 4;
        block[1 + (k * G + i) / 2] = finite ? static_cast<uint8_t>(pair) : uint8_t{0};
      }
    } else {
#pragma unroll
      for (int i = 0; i < G; i += 4) {
        uint32_t scaled[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) scaled[j] = as_bits(__fmul_rn(__uint_as_float(bits[i + j]), inv));
        uint32_t codes;
        if constexpr (F == kMxE4M3) {
          codes = cast_detail::e4m3_word<cast_detail::kF32>(scaled);  // as encode_narrow<3, 7, 0x7E, 0x7F, 7>
        } else {
          codes = 0;
#pragma unroll
          for (int j = 0; j < 4; ++j) codes |= cast_detail::encode_narrow<2, 15, 0x7Bu, 0x7Fu, 7>(scaled[j]) << (8 * j);
        }
        codes = finite ? codes : 0u;
#pragma unroll
        for (int j = 0; j < 4; ++j) block[1 + k * G + i + j] = static_cast<uint8_t>(codes >> (8 * j));
      }
    }
  }
}

// A block's scale: q8_0 and q4_0 its f16 d from the first two bytes; MX the E8M0 byte.
template <int F>
__device__ __forceinline__ uint32_t block_scale(const uint8_t* b) {
  if constexpr (F == kQ8_0 || F == kQ4_0) return static_cast<uint32_t>(b[0] | (b[1] << 8));
  return b[0];
}

// An MX element's value (its code: E2M1, E4M3 or E5M2), exact.
template <int F>
__device__ __forceinline__ float element_value(uint32_t code) {
  if constexpr (F == kMxE2M1) return decode_e2m1(code);
  if constexpr (F == kMxE4M3) return as_float(cast_detail::decode_narrow<4, 3, 7, false>(code));
  return as_float(cast_detail::decode_narrow<5, 2, 15, true>(code));
}
// Codes of an MX element format (the size of a decode table).
template <int F>
inline constexpr int kElementCodes = F == kMxE2M1 ? 16 : 256;

// An MX element under the block's E8M0 scale: element x 2^(scale - 127) (past f32's range +-Inf),
// NaN for the scale 0xFF.
__device__ __forceinline__ float scaled_element(uint32_t scale, float element) {
  const float value = __fmul_rn(element, pow2(static_cast<int>(scale) - 127));
  return scale == 0xFFu ? __uint_as_float(0x7FC00000u) : value;
}

// Value of one element code (q8_0: the byte; q4_0: the nibble; MX: the element's code) under the
// block's scale (exact f32). kTable: MX elements come from `table` (element_value of every code,
// in shared memory).
template <int F, bool kTable = false>
__device__ __forceinline__ float decode_code(uint32_t scale, uint32_t code, const uint32_t* table = nullptr) {
  if constexpr (F == kQ8_0 || F == kQ4_0) {
    const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(scale)));
    if constexpr (F == kQ8_0) return d * static_cast<float>(static_cast<int8_t>(code));
    return d * static_cast<float>(static_cast<int>(code) - 8);
  } else if constexpr (kTable) {
    return scaled_element(scale, __uint_as_float(table[code]));
  } else {
    return scaled_element(scale, element_value<F>(code));
  }
}

// Value j of a block, the block's bytes at `b`.
template <int F>
__device__ __forceinline__ float decode_value(const uint8_t* b, int j) {
  uint32_t code;
  if constexpr (F == kQ8_0) {
    code = b[2 + j];
  } else if constexpr (F == kQ4_0) {
    const uint32_t byte = b[2 + (j & 15)];
    code = j < 16 ? byte & 15u : byte >> 4;
  } else if constexpr (F == kMxE2M1) {
    const uint32_t byte = b[1 + j / 2];
    code = j % 2 == 0 ? byte & 15u : byte >> 4;
  } else {
    code = b[1 + j];
  }
  return decode_code<F>(block_scale<F>(b), code);
}

// N bytes from byte `offset` of `words` (shared memory with at least 4 readable bytes past the
// last) as little-endian words: aligned 32-bit loads joined by funnel shifts.
template <int N>
__device__ __forceinline__ void load_bytes(const uint32_t* words, int offset, uint32_t (&out)[(N + 3) / 4]) {
  const uint32_t* w = words + offset / 4;
  const uint32_t shift = static_cast<uint32_t>(offset % 4) * 8;
  uint32_t a[(N + 3) / 4 + 1];
#pragma unroll
  for (int i = 0; i <= (N + 3) / 4; ++i) a[i] = w[i];
#pragma unroll
  for (int i = 0; i < (N + 3) / 4; ++i) out[i] = __funnelshift_r(a[i], a[i + 1], shift);
}

// Values kG .. kG + G - 1 of the block at byte `b` of `tile` (shared memory, 4-byte aligned), as
// decode_value gives them; MX elements from `table`.
template <int F, int G>
__device__ __forceinline__ void decode_piece(const uint8_t* tile, int b, int k, const uint32_t* table, float (&v)[G]) {
  const uint32_t scale = block_scale<F>(tile + b);
  const auto* words = reinterpret_cast<const uint32_t*>(tile);
  if constexpr (F == kQ4_0) {
    // Values j < 16 are the low nibbles of bytes 2 + j, the others the high nibbles of 2 + j - 16.
    uint32_t w[(G + 3) / 4];
    load_bytes<G>(words, b + 2 + ((k * G) & 15), w);
    const uint32_t shift = k * G < 16 ? 0u : 4u;
#pragma unroll
    for (int i = 0; i < G; ++i) v[i] = decode_code<F>(scale, (w[i / 4] >> (8 * (i % 4) + shift)) & 15u);
  } else if constexpr (F == kMxE2M1) {
    uint32_t w[(G / 2 + 3) / 4];
    load_bytes<G / 2>(words, b + 1 + k * G / 2, w);
#pragma unroll
    for (int i = 0; i < G; ++i) v[i] = decode_code<F, true>(scale, (w[i / 8] >> (4 * (i % 8))) & 15u, table);
  } else {
    uint32_t w[(G + 3) / 4];
    load_bytes<G>(words, b + (F == kQ8_0 ? 2 : 1) + k * G, w);
#pragma unroll
    for (int i = 0; i < G; ++i) v[i] = decode_code<F, F != kQ8_0>(scale, (w[i / 4] >> (8 * (i % 4))) & 0xFFu, table);
  }
}

}  // namespace dnnb::cuda_kernels::blocks
