// The block formats' codecs on CUDA (kernels/cuda/quantize_blocks.cu, dequantize_blocks.cu), bit
// for bit as core/dtype.cpp's quantize_row and load_element (docs/ops-family4.md,
// "quantize_blocks"). A block's 32 values are held by a group of L consecutive lanes of a warp,
// G = 32 / L values a lane (lane k of the group: values kG .. kG + G - 1); the group agrees on
// the block's amax (and q4_0's signed maximum) through shuffles of width L, then each lane
// encodes its own values. The element encoders and decoders are cast.cuh's (cast_detail).
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
__device__ __forceinline__ uint32_t encode_e2m1(float v) {
  const float a = fabsf(v);
  const uint32_t c = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return c | ((__float_as_uint(v) >> 28) & 0x8u);
}
__device__ __forceinline__ float decode_e2m1(uint32_t c) {
  const uint32_t m = c & 7u;
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6: m < 2 subnormal (m x 0.5), else (2 + (m & 1)) x 2^((m >> 1) - 2).
  const float v = m < 2 ? 0.5f * static_cast<float>(m) : __uint_as_float(((m >> 1) + 126u) << 23) * (1.0f + 0.5f * (m & 1));
  return (c & 8u) ? -v : v;
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
    for (int i = 0; i < G; ++i) {
      const float q = roundf(__fmul_rn(v[i], id));  // half away from zero
      const int c = isnan(q) ? 0 : static_cast<int>(fminf(fmaxf(q, -127.0f), 127.0f));
      out[2 + k * G + i] = h.finite ? static_cast<uint8_t>(static_cast<int8_t>(c)) : uint8_t{0};
    }
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
      const float s = __fadd_rn(__fmul_rn(v[i], id), 8.5f);  // rounded apart, as ggml's C
      const uint32_t q = !(s > 0.0f) ? 0u : s >= 15.0f ? 15u : static_cast<uint32_t>(s);
      nibbles |= (h.finite ? q : 8u) << (4 * i);
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

// Value j of a block (exact f32; MX past f32's range is +-Inf), the block's bytes at `b`.
template <int F>
__device__ __forceinline__ float decode_value(const uint8_t* b, int j) {
  if constexpr (F == kQ8_0 || F == kQ4_0) {
    const float d = __half2float(__ushort_as_half(static_cast<uint16_t>(b[0] | (b[1] << 8))));
    if constexpr (F == kQ8_0) {
      return d * static_cast<float>(static_cast<int8_t>(b[2 + j]));
    } else {
      const uint32_t byte = b[2 + (j & 15)];
      return d * static_cast<float>(static_cast<int>(j < 16 ? byte & 15u : byte >> 4) - 8);
    }
  } else {
    const uint32_t s = b[0];
    float element;
    if constexpr (F == kMxE2M1) {
      const uint32_t byte = b[1 + j / 2];
      element = decode_e2m1(j % 2 == 0 ? byte & 15u : byte >> 4);
    } else if constexpr (F == kMxE4M3) {
      element = as_float(cast_detail::decode_narrow<4, 3, 7, false>(b[1 + j]));
    } else {
      element = as_float(cast_detail::decode_narrow<5, 2, 15, true>(b[1 + j]));
    }
    const float value = __fmul_rn(element, pow2(static_cast<int>(s) - 127));
    return s == 0xFFu ? __uint_as_float(0x7FC00000u) : value;
  }
}

}  // namespace dnnb::cuda_kernels::blocks
