// The CUDA cast's conversions and its flat kernel's per-thread body (kernels/cuda/cast.cu), as
// __host__ __device__ code, so that the host can run them against core/dtype.cpp: the element
// conversions over every input, and the flat body's indexing, packing and tables over whole
// arrays (docs/cuda.md, "Family 4"). Device-only steps (cvt instructions) have a host model of
// the instruction in their place, named where they are.
//
// Conversions: integer code and one exact f32 add or subtract; source
// -> f32 bits (exact) -> target, one rounding, to nearest even. No cvt instruction for one
// element: the fp8 ones (cvt.rn.satfinite.e4m3x2/e5m2x2.f32) saturate e5m2's overflow, which
// torch sends to Inf, and give NaN without its sign; the f16/bf16 ones give a canonical NaN
// instead of the core's quiet NaN with the input's sign.
//  - Decode f16/e5m2/e4m3fn: the bits shifted into an f32 and the exponent rebiased; a subnormal
//    as (2^(1-B) + m 2^(1-B-M)) - 2^(1-B), exact; Inf/NaN as the core (NaN quiet, payload kept;
//    e4m3fn's S.1111.111 0x7FC00000). bf16: a 16-bit shift.
//  - Encode f16/fp8: a normal result by rebiasing the exponent and adding half an ulp less one
//    plus the lowest kept bit before the shift (round to nearest even, a carry moving into the
//    exponent); below the smallest normal |x| + 2^(1-B-M+23), an f32 whose ulp is the target's
//    quantum, so the IEEE add rounds to nearest even and the quanta are the sum's low bits. Past
//    the largest finite: f16/e5m2 Inf, e4m3fn +-448 (torch 2.15 saturates). bf16: the same
//    rounding add on the top 16 bits (its exponent range is f32's). f16 -> e5m2 rounds the f16
//    bits directly (e5m2 is f16's top byte).
//  - e4m3fn from f32, f16 or bf16 in the flat kernel: four elements a word by
//    cvt.rn.satfinite.e4m3x2 (two elements an instruction; it rounds to nearest even and
//    saturates finite overflow and Inf to +-448 as torch 2.15 does), then every byte's sign set
//    to its input's: the instruction's NaN has none (e4m3_word). About 3 instructions an
//    element where the integer encoder takes ~17 on the integer pipe: bf16 -> e4m3fn (3 bytes an
//    element) was bound by them at ~83% of copy.
//  - e5m2 from bf16 in the flat kernel: through f16 by cvt.rn.f16x2.f32, exact for every bf16
//    (e5m2_word_of_bf16), then f16's top byte rounded: ~9 instructions an element for ~17.
//  - Same dtype: the bits copied.
//
// Flat body (cast_flat_thread, contiguous 16-byte aligned x and y): a step is one 16-byte store
// of y per thread, G = 16 / sizeof(target) elements, whose source is G * sizeof(source) bytes
// (4, 8, 16, 32 or 64): one 4-, 8- or 16-byte load, or 2 or 4 16-byte loads. Neighbouring lanes
// take neighbouring steps, so every warp-wide store writes 512 contiguous bytes (whole 32-byte
// sectors, whole lines) and every widening load reads 128 or 256 contiguous bytes; a narrowing
// lane's 2 or 4 loads span 32 or 64 bytes, the sectors each instruction half-uses filled by the
// next from L1. (Two 16-byte stores per lane 32 bytes apart, as a 16-byte load of the narrow
// side widened gives, half-fill every sector each instruction writes: L2 merges them, and the
// widening casts ran at 57-72% of copy that way.) A thread issues the loads of kSteps steps,
// 64 bytes of x (one step from 64 up), before converting and storing any; blocks of 256 threads
// take kSteps * 256 consecutive steps an iteration, in a grid-stride loop over the resident
// blocks. The n % G elements past the last whole step: block 0, one a thread.
// 8-bit sources read their result from a 256-entry table in shared memory (one load an element
// instead of a decode and an encode) held in kCopies = min(G, 8) copies 257 words apart: lane l
// reads copy (l G / 32) mod kCopies, so the 32 entries that a warp's lanes read for one element
// index of their steps sit in 32 different banks when the codes run in order (the bench's
// inputs, every encoding in turn) or repeat (as zeros do): with one copy, those codes G apart hit
// G / 32 of the banks, an 8-way conflict for 8 -> 16 bits.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define DNNB_CAST_HD __host__ __device__ __forceinline__
#else
#define DNNB_CAST_HD inline
#endif
// `#pragma unroll` for the device compilation only (the host compiler would warn about it).
#if defined(__CUDA_ARCH__)
#define DNNB_CAST_UNROLL _Pragma("unroll")
#else
#define DNNB_CAST_UNROLL
#endif

// Own namespace: other kernel headers name their helpers alike.
namespace dnnb::cuda_kernels::cast_detail {

// ---- conversion ------------------------------------------------------------------------------

enum Format : int { kF32, kF16, kBF16, kE4M3, kE5M2 };

template <int F>
struct Storage {
  using type = uint8_t;
};
template <>
struct Storage<kF32> {
  using type = uint32_t;
};
template <>
struct Storage<kF16> {
  using type = uint16_t;
};
template <>
struct Storage<kBF16> {
  using type = uint16_t;
};

DNNB_CAST_HD float as_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}
DNNB_CAST_HD uint32_t as_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}
// Round-to-nearest-even f32 add and subtract (no contraction: none could apply, stated anyway).
DNNB_CAST_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
DNNB_CAST_HD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// A narrow float (sign, E exponent bits, M mantissa bits, bias B) to f32 bits, exactly. kIeee:
// the all-ones exponent is Inf (mantissa 0) or NaN; otherwise (e4m3fn) only S.1..1.1..1 is NaN.
template <int E, int M, int B, bool kIeee>
DNNB_CAST_HD uint32_t decode_narrow(uint32_t code) {
  constexpr uint32_t kMagMask = (1u << (E + M)) - 1;
  const uint32_t sign = ((code >> (E + M)) & 1u) << 31;
  const uint32_t mag = code & kMagMask;
  const uint32_t shifted = mag << (23 - M);
  const uint32_t exponent = mag >> M;
  // Both forms computed and one selected (no branch: lanes of a warp take different ones).
  constexpr uint32_t kOne = (128u - B) << 23;  // 2^(1-B)
  const uint32_t normal = shifted + ((127u - B) << 23);
  // Zero or subnormal: m 2^(1-B-M) = (2^(1-B) + m 2^(1-B-M)) - 2^(1-B), exact.
  const uint32_t small = as_bits(sub_rn(as_float(shifted + kOne), as_float(kOne)));
  uint32_t out = exponent == 0 ? small : normal;
  if constexpr (kIeee) {  // Inf, or a NaN made quiet with its payload kept
    const uint32_t mantissa = (mag & ((1u << M) - 1)) << (23 - M);
    const uint32_t special = 0x7F800000u | mantissa | (mantissa != 0 ? 0x00400000u : 0u);
    out = exponent == (1u << E) - 1 ? special : out;
  } else {
    out = mag == kMagMask ? 0x7FC00000u : out;
  }
  return out | sign;
}

// f32 bits to a narrow float with M mantissa bits and bias B (exponent range as wide as the
// target's field allows), round to nearest even; codes past kTop (finite overflow, Inf) become
// kTop; NaN kNan; the sign at bit kSignBit.
template <int M, int B, uint32_t kTop, uint32_t kNan, int kSignBit>
DNNB_CAST_HD uint32_t encode_narrow(uint32_t bits) {
  const uint32_t a = bits & 0x7FFFFFFFu;
  constexpr uint32_t kMagic = (151u - B - M) << 23;  // 2^(1-B-M+23): its ulp is the quantum
  const uint32_t small = as_bits(add_rn(as_float(a), as_float(kMagic))) - kMagic;
  const uint32_t normal = (a - ((127u - B) << 23) + ((1u << (22 - M)) - 1) + ((a >> (23 - M)) & 1u)) >> (23 - M);
  uint32_t code = a < ((128u - B) << 23) ? small : normal;  // below the smallest normal 2^(1-B)?
  code = code < kTop ? code : kTop;
  code = a > 0x7F800000u ? kNan : code;
  return code | ((bits >> (31 - kSignBit)) & (1u << kSignBit));
}

// bf16 (f32's exponent range): the rounding add on the top 16 bits; overflow reaches 0x7F80.
DNNB_CAST_HD uint32_t encode_bf16(uint32_t bits) {
  const uint32_t a = bits & 0x7FFFFFFFu;
  const uint32_t code = a > 0x7F800000u ? 0x7FC0u : (a + 0x7FFFu + ((a >> 16) & 1u)) >> 16;
  return code | ((bits >> 16) & 0x8000u);
}

template <int F>
DNNB_CAST_HD uint32_t to_f32(uint32_t code) {
  if constexpr (F == kF32) return code;
  if constexpr (F == kF16) return decode_narrow<5, 10, 15, true>(code);
  if constexpr (F == kBF16) return code << 16;
  if constexpr (F == kE4M3) return decode_narrow<4, 3, 7, false>(code);
  if constexpr (F == kE5M2) return decode_narrow<5, 2, 15, true>(code);
  return 0;
}

template <int F>
DNNB_CAST_HD uint32_t from_f32(uint32_t bits) {
  if constexpr (F == kF32) return bits;
  if constexpr (F == kF16) return encode_narrow<10, 15, 0x7C00u, 0x7E00u, 15>(bits);
  if constexpr (F == kBF16) return encode_bf16(bits);
  if constexpr (F == kE4M3) return encode_narrow<3, 7, 0x7Eu, 0x7Fu, 7>(bits);  // saturates at 448
  if constexpr (F == kE5M2) return encode_narrow<2, 15, 0x7Cu, 0x7Fu, 7>(bits);  // overflow -> Inf
  return 0;
}

// One element: source code to target code.
template <int S, int D>
DNNB_CAST_HD uint32_t cast_code(uint32_t code) {
  if constexpr (S == D) {
    return code;
  } else if constexpr (S == kF16 && D == kE5M2) {  // the top byte of the f16, rounded to even
    const uint32_t a = code & 0x7FFFu;
    const uint32_t out = a > 0x7C00u ? 0x7Fu : (a + 0x7Fu + ((a >> 8) & 1u)) >> 8;
    return out | ((code >> 8) & 0x80u);
  } else if constexpr (S == kF16 && D != kF32) {
#ifdef __CUDA_ARCH__
    // On the device the f16 decode is the cvt.f32.f16 instruction (exact, subnormals kept; one
    // instruction on the FMA pipe where the integer form takes ~12 on the integer pipe, which
    // would bind f16 -> fp8). Its NaN is canonical, so the f16's sign is ORed back in (the
    // encoders read only a NaN's sign); an f32 target keeps the integer decode for the core's
    // NaN payload. tests/test_cast.cpp checks this path on the GPU.
    const uint32_t bits = __float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(code))));
    return from_f32<D>(bits | ((code & 0x8000u) << 16));
#else
    return from_f32<D>(to_f32<S>(code));
#endif
  } else {
    return from_f32<D>(to_f32<S>(code));
  }
}

// ---- e4m3fn by cvt, four elements a word ----------------------------------------------------

// __byte_perm: byte i of the result is byte s_i (nibble i of s, 0-7) of the pair (y:x).
DNNB_CAST_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s);
#else
  const uint64_t pair = (uint64_t{y} << 32) | x;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) out |= static_cast<uint32_t>((pair >> (8 * ((s >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
  return out;
#endif
}

// The host's model of cvt.rn.satfinite.e4m3x2 for one element: round to nearest even, finite
// overflow and +-Inf to +-448, NaN 0x7F whatever its sign (PTX ISA, cvt: "satfinite"); that is
// the core's encoder with the NaN's sign dropped.
inline uint32_t e4m3_cvt_model(uint32_t f32_bits) {
  const uint32_t code = from_f32<kE4M3>(f32_bits);
  return (code & 0x7Fu) == 0x7Fu ? 0x7Fu : code;
}

// Two f32s to e4m3fn, lo in bits 0-7 and hi in 8-15 (the instruction puts its first operand high).
DNNB_CAST_HD uint32_t e4m3x2_of_f32(uint32_t lo, uint32_t hi) {
#ifdef __CUDA_ARCH__
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return r;
#else
  return e4m3_cvt_model(lo) | e4m3_cvt_model(hi) << 8;
#endif
}

// An f16 pair (element 0 in bits 0-15) to e4m3fn, element 0 in bits 0-7. One rounding of the
// f16, which f32 holds exactly: the same as through f32.
DNNB_CAST_HD uint32_t e4m3x2_of_f16x2(uint32_t pair) {
#ifdef __CUDA_ARCH__
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(pair));
  return r;
#else
  return e4m3_cvt_model(to_f32<kF16>(pair & 0xFFFFu)) | e4m3_cvt_model(to_f32<kF16>(pair >> 16)) << 8;
#endif
}

// Four e4m3fn codes (byte k = element k) given the signs in bit 7 of the bytes of `signs`: every
// result has its input's sign (zeros and +-448 included), and the cvt's NaN has none.
DNNB_CAST_HD uint32_t e4m3_signed(uint32_t codes, uint32_t signs) {
  return (codes & 0x7F7F7F7Fu) | (signs & 0x80808080u);
}

// Source elements 4k .. 4k + 3 (in: 4 f32 words or 2 words of 16-bit pairs) to e4m3fn, element
// 4k + j in byte j. bf16 becomes f32 by a shift (low half) or a mask (high half).
template <int S>
DNNB_CAST_HD uint32_t e4m3_word(const uint32_t* in) {
  if constexpr (S == kF32) {
    const uint32_t codes = e4m3x2_of_f32(in[0], in[1]) | e4m3x2_of_f32(in[2], in[3]) << 16;
    // The sign bytes (byte 3) of the four words, in order.
    const uint32_t signs = byte_perm(byte_perm(in[0], in[1], 0x0073u), byte_perm(in[2], in[3], 0x0073u), 0x5410u);
    return e4m3_signed(codes, signs);
  } else {
    uint32_t codes;
    if constexpr (S == kF16) {
      codes = e4m3x2_of_f16x2(in[0]) | e4m3x2_of_f16x2(in[1]) << 16;
    } else {
      static_assert(S == kBF16, "e4m3_word takes f32, f16 or bf16");
      codes = e4m3x2_of_f32(in[0] << 16, in[0] & 0xFFFF0000u) | e4m3x2_of_f32(in[1] << 16, in[1] & 0xFFFF0000u) << 16;
    }
    return e4m3_signed(codes, byte_perm(in[0], in[1], 0x7531u));  // bytes 1 and 3 of each word
  }
}

// ---- e5m2 from bf16 through f16 ------------------------------------------------------------

// Two f32s to f16, lo in bits 0-15: cvt.rn.f16x2.f32 on the device (first operand high); on the
// host a model of it: round to nearest even, overflow to Inf, NaN 0x7FFF without its sign.
DNNB_CAST_HD uint32_t f16x2_of_f32(uint32_t lo, uint32_t hi) {
#ifdef __CUDA_ARCH__
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return r;
#else
  const auto one = [](uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFu : from_f32<kF16>(b); };
  return one(lo) | one(hi) << 16;
#endif
}

// Four bf16 (two words) to e5m2, element j in byte j, as e5m2(f16(x)): f16 holds a bf16 exactly
// from 2^-17 up (8 significant bits, quantum 2^-24) and sends it to Inf past 65520 as e5m2 does
// from 61440, so only |x| < 2^-17 rounds twice, and those give +-0 either way (half e5m2's
// smallest subnormal 2^-16 is 2^-17). The f16's sign is set to the bf16's (the cvt's NaN has
// none; other results have it already); f16 -> e5m2 is the cheap rounding of the top byte.
DNNB_CAST_HD uint32_t e5m2_word_of_bf16(const uint32_t* in) {
  uint32_t out = 0;
DNNB_CAST_UNROLL
  for (int k = 0; k < 2; ++k) {
    const uint32_t h = (f16x2_of_f32(in[k] << 16, in[k] & 0xFFFF0000u) & 0x7FFF7FFFu) | (in[k] & 0x80008000u);
    out |= (cast_code<kF16, kE5M2>(h & 0xFFFFu) | cast_code<kF16, kE5M2>(h >> 16) << 8) << (16 * k);
  }
  return out;
}

// ---- tables for 8-bit sources ---------------------------------------------------------------

inline constexpr int kCastThreads = 256;  // every cast kernel's block; also a table's entries
inline constexpr int kTableStride = 257;  // words between copies: 1 mod 32 banks

// Entry `code` (< 256, one a thread) of kCopies copies of the table of an 8-bit source.
template <int S, int D, int kCopies>
DNNB_CAST_HD void fill_table_entry(uint32_t* table, int code) {
  const uint32_t v = cast_code<S, D>(static_cast<uint32_t>(code));
DNNB_CAST_UNROLL
  for (int c = 0; c < kCopies; ++c) table[c * kTableStride + code] = v;
}

// One element: an 8-bit source (of another dtype) looks its result up, the rest convert.
template <int S, int D>
DNNB_CAST_HD uint32_t convert(uint32_t code, const uint32_t* table) {
  if constexpr (sizeof(typename Storage<S>::type) == 1 && S != D) {
    return table[code];
  } else {
    return cast_code<S, D>(code);
  }
}

// ---- flat body ------------------------------------------------------------------------------

// The flat kernel's shape for a pair (see the file comment).
template <int S, int D>
struct Flat {
  static constexpr int kSrc = static_cast<int>(sizeof(typename Storage<S>::type));
  static constexpr int kDst = static_cast<int>(sizeof(typename Storage<D>::type));
  static constexpr int kG = 16 / kDst;              // elements a step: one 16-byte store
  static constexpr int kLoadBytes = kG * kSrc;      // x bytes a step: 4, 8, 16, 32 or 64
  static constexpr int kLoadWords = kLoadBytes / 4;
  static constexpr int kSteps = kLoadBytes >= 64 ? 1 : 64 / kLoadBytes;  // 64 bytes of x loaded
  static constexpr bool kTable = kSrc == 1 && S != D;
  static constexpr int kCopies = kG < 8 ? kG : 8;   // table copies (when kTable)
  static constexpr int kTableWords = kTable ? kCopies * kTableStride : 1;
};

// B bytes as one access (B = 4, 8 or 16): the compiler emits one 32-, 64- or 128-bit load or store.
template <int B>
struct alignas(B) Words {
  uint32_t w[B / 4];
};

// kBytes of x at p (aligned to min(kBytes, 16)) into words, as 16-byte loads from 16 bytes up.
template <int kBytes>
DNNB_CAST_HD void load_words(const unsigned char* p, uint32_t* w) {
  constexpr int kPiece = kBytes < 16 ? kBytes : 16;
  using P = Words<kPiece>;
DNNB_CAST_UNROLL
  for (int k = 0; k < kBytes / kPiece; ++k) {
    const P v = reinterpret_cast<const P*>(p)[k];
DNNB_CAST_UNROLL
    for (int j = 0; j < kPiece / 4; ++j) w[k * (kPiece / 4) + j] = v.w[j];
  }
}

// Element e of elements of kSize bytes held as words, little-endian as in memory.
template <int kSize>
DNNB_CAST_HD uint32_t word_element(const uint32_t* words, int e) {
  constexpr int kPer = 4 / kSize;
  if constexpr (kPer == 1)
    return words[e];
  else
    return (words[e / kPer] >> (8 * kSize * (e % kPer))) & ((1u << (8 * kSize)) - 1);
}

// One step: kG source elements (kLoadWords words) to kG target elements (4 words). Every index
// is a compile-time constant once unrolled, so the words stay in registers.
template <int S, int D>
DNNB_CAST_HD void convert_step(const uint32_t* in, uint32_t* out, const uint32_t* table) {
  using F = Flat<S, D>;
  if constexpr (S == D) {
DNNB_CAST_UNROLL
    for (int w = 0; w < 4; ++w) out[w] = in[w];
  } else if constexpr (D == kE4M3 && F::kSrc > 1) {
DNNB_CAST_UNROLL
    for (int w = 0; w < 4; ++w) out[w] = e4m3_word<S>(in + w * F::kSrc);  // 4 elements = kSrc words
  } else if constexpr (S == kBF16 && D == kE5M2) {
DNNB_CAST_UNROLL
    for (int w = 0; w < 4; ++w) out[w] = e5m2_word_of_bf16(in + 2 * w);
  } else {
    constexpr int kPer = 4 / F::kDst;  // target elements a word
DNNB_CAST_UNROLL
    for (int w = 0; w < 4; ++w) {
      uint32_t word = 0;
DNNB_CAST_UNROLL
      for (int k = 0; k < kPer; ++k)
        word |= convert<S, D>(word_element<F::kSrc>(in, w * kPer + k), table) << (8 * F::kDst * k);
      out[w] = word;
    }
  }
}

// Thread `thread` of block `block` of `blocks` (see the file comment); `table` is the block's
// (kCopies copies) for an 8-bit source.
template <int S, int D>
DNNB_CAST_HD void cast_flat_thread(const void* x, void* y, int64_t n, int64_t block, int64_t blocks, int thread,
                                   const uint32_t* table) {
  using F = Flat<S, D>;
  using TS = typename Storage<S>::type;
  using TD = typename Storage<D>::type;
  if constexpr (F::kTable) table += (((thread & 31) * F::kG >> 5) & (F::kCopies - 1)) * kTableStride;
  const auto* in = static_cast<const unsigned char*>(x);
  auto* out = static_cast<unsigned char*>(y);
  const int64_t steps = n / F::kG;
  constexpr int64_t kPerIteration = int64_t{kCastThreads} * F::kSteps;
  for (int64_t first = block * kPerIteration + thread; first < steps; first += blocks * kPerIteration) {
    uint32_t words[F::kSteps][F::kLoadWords];  // every step's loads before any store
DNNB_CAST_UNROLL
    for (int u = 0; u < F::kSteps; ++u) {
      const int64_t s = first + int64_t{u} * kCastThreads;
      if (s < steps) load_words<F::kLoadBytes>(in + s * F::kLoadBytes, words[u]);
    }
DNNB_CAST_UNROLL
    for (int u = 0; u < F::kSteps; ++u) {
      const int64_t s = first + int64_t{u} * kCastThreads;
      if (s < steps) {
        Words<16> r;
        convert_step<S, D>(words[u], r.w, table);
        reinterpret_cast<Words<16>*>(out)[s] = r;
      }
    }
  }
  const int64_t tail = steps * F::kG + thread;  // the n % kG elements after the last step
  if (block == 0 && thread < F::kG && tail < n)
    static_cast<TD*>(y)[tail] = static_cast<TD>(convert<S, D>(static_cast<const TS*>(x)[tail], table));
}

}  // namespace dnnb::cuda_kernels::cast_detail
