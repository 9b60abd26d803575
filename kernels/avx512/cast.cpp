// cast: y = x.to(dtype) between f32, f16, bf16, f8_e4m3fn and f8_e5m2, every pair, bit for bit
// as core/dtype.cpp converts (docs/ops-family4.md, "cast"; docs/avx512.md, "Family 4").
//
// Every element goes source -> f32 -> target, 16 lanes at a time. The f32 step is exact (every
// value of the five formats is an f32), so the result is rounded once, as core/dtype.cpp and
// torch round it.
//  - Decodes: f16 by VCVTPH2PS (exact; a NaN keeps its payload and is made quiet, as the core's
//    decode does), bf16 by a 16-bit shift, e5m2 as the top byte of an f16, e4m3fn in integers
//    (the exponent rebiased, subnormals as M x 2^-9 from VCVTDQ2PS, S.1111.111 NaN).
//  - Encodes: f16 by VCVTPS2PH in round-to-nearest-even (subnormals kept, overflow to Inf),
//    bf16 by avx512_common.h's BF16::encode (VCVTNEPS2BF16 with its subnormal lanes redone in
//    integers); NaN lanes of both are then set to the core's quiet NaN with the input's sign
//    (0x7E00 / 0x7FC0), not the payload-keeping NaN the instructions make. The fp8 formats in
//    integers (below), with e4m3fn's overflow and Inf saturating to +-448 and e5m2's going to
//    Inf, as torch 2.15.
//  - A same-dtype cast is a copy of the bits (memcpy), as torch's x.to(x.dtype) returns x.
// Layout: contiguous x and y are one long row; otherwise row by row, unit-stride rows read in
// place, strided ones gathered into per-thread scratch. Work goes to threads in tiles of 8192
// columns; a large output (inputs plus output past the last-level cache, stream_rows) is written
// with 64-byte non-temporal stores, 64 elements per step.
#include <cstring>

#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/fp8_encode.h"
#include "suites/ops/cast_desc.h"

namespace dnnb::avx512 {
namespace {

// ---- Source formats: 16 elements to 16 f32 lanes (exact) ---------------------------------

struct SrcF32 {
  using storage = float;
  DNNB_AVX512_INLINE static __m512 load(const float* p) { return _mm512_loadu_ps(p); }
  DNNB_AVX512_INLINE static __m512 load(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct SrcF16 {
  using storage = uint16_t;
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};
struct SrcBF16 {
  using storage = uint16_t;
  DNNB_AVX512_INLINE static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint16_t* p, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, p)); }
};
// e5m2 is the top byte of an f16 with the same exponent bias: decoded through VCVTPH2PS, which
// also gives a NaN the core's bits (quiet, payload m << 21).
struct SrcE5M2 {
  using storage = uint8_t;
  DNNB_AVX512_INLINE static __m512 widen(__m128i b) {
    return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint8_t* p) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint8_t* p, __mmask16 m) { return widen(_mm_maskz_loadu_epi8(m, p)); }
};
// e4m3fn: S.EEEE.MMM, bias 7. E > 0: the f32 with exponent E + 120 and the mantissa bits on
// top; E = 0: M x 2^-9 (0 for M = 0), exact from VCVTDQ2PS and a power-of-two multiply with a
// normal result; S.1111.111: the quiet NaN 0x7FC00000. The sign bit is ORed in last.
struct SrcE4M3 {
  using storage = uint8_t;
  DNNB_AVX512_INLINE static __m512 widen(__m128i bytes) {
    const __m512i b = _mm512_cvtepu8_epi32(bytes);
    const __m512i mag = _mm512_and_si512(b, _mm512_set1_epi32(0x7F));
    const __m512i normal = _mm512_add_epi32(_mm512_slli_epi32(mag, 20), _mm512_set1_epi32(120 << 23));
    const __m512 subnormal = _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(0x1p-9f));
    const __mmask16 is_sub = _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(8));
    const __mmask16 is_nan = _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7F));
    __m512i r = _mm512_mask_mov_epi32(normal, is_sub, _mm512_castps_si512(subnormal));
    r = _mm512_mask_mov_epi32(r, is_nan, _mm512_set1_epi32(0x7FC00000));
    const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24);
    return _mm512_castsi512_ps(_mm512_or_si512(r, sign));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint8_t* p) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  DNNB_AVX512_INLINE static __m512 load(const uint8_t* p, __mmask16 m) { return widen(_mm_maskz_loadu_epi8(m, p)); }
};

// ---- Target formats: 16 f32 lanes to 16 codes, packed (f32: __m512, 16-bit: __m256i, 8-bit:
// __m128i), and their stores ------------------------------------------------------------------

struct DstF32 {
  using storage = float;
  using packed = __m512;
  DNNB_AVX512_INLINE static __m512 encode(__m512 v) { return v; }
  DNNB_AVX512_INLINE static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  DNNB_AVX512_INLINE static void store(float* p, __m512 v, __mmask16 m) { _mm512_mask_storeu_ps(p, m, v); }
  // 64 elements from four encodes to a 64-byte aligned p, non-temporal.
  DNNB_AVX512_INLINE static void stream4(float* p, const __m512 (&v)[4]) {
    for (int k = 0; k < 4; ++k) _mm512_stream_ps(p + 16 * k, v[k]);
  }
  DNNB_AVX512_INLINE static void store4(float* p, const __m512 (&v)[4]) {
    for (int k = 0; k < 4; ++k) _mm512_storeu_ps(p + 16 * k, v[k]);
  }
};

// The 16-bit targets' shared stores; Enc::encode gives the packed codes.
template <class Enc>
struct Dst16 {
  using storage = uint16_t;
  using packed = __m256i;
  DNNB_AVX512_INLINE static __m256i encode(__m512 v) { return Enc::encode(v); }
  DNNB_AVX512_INLINE static void store(uint16_t* p, __m256i v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  DNNB_AVX512_INLINE static void store(uint16_t* p, __m256i v, __mmask16 m) { _mm256_mask_storeu_epi16(p, m, v); }
  DNNB_AVX512_INLINE static __m512i join(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  DNNB_AVX512_INLINE static void stream4(uint16_t* p, const __m256i (&v)[4]) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), join(v[0], v[1]));
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p + 32), join(v[2], v[3]));
  }
  DNNB_AVX512_INLINE static void store4(uint16_t* p, const __m256i (&v)[4]) {
    _mm512_storeu_si512(p, join(v[0], v[1]));
    _mm512_storeu_si512(p + 32, join(v[2], v[3]));
  }
};

// VCVTPS2PH rounds to nearest even, keeps subnormals and overflows to Inf, as the core; a NaN
// lane becomes 0x7E00 with the input's sign.
struct EncF16 {
  DNNB_AVX512_INLINE static __m256i encode(__m512 v) {
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m256i quiet = _mm512_cvtepi32_epi16(_mm512_or_si512(sign_at(v, 15), _mm512_set1_epi32(0x7E00)));
    return _mm256_mask_mov_epi16(h, nan, quiet);
  }
};
// BF16::encode (round to nearest even, subnormals exact); a NaN lane becomes 0x7FC0 with the
// input's sign.
struct EncBF16 {
  DNNB_AVX512_INLINE static __m256i encode(__m512 v) {
    const __m256i h = BF16::encode(v);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m256i quiet = _mm512_cvtepi32_epi16(_mm512_or_si512(sign_at(v, 15), _mm512_set1_epi32(0x7FC0)));
    return _mm256_mask_mov_epi16(h, nan, quiet);
  }
};
using DstF16 = Dst16<EncF16>;
using DstBF16 = Dst16<EncBF16>;

template <int M, int B, uint32_t Top>
struct DstFp8 {
  using storage = uint8_t;
  using packed = __m128i;
  DNNB_AVX512_INLINE static __m128i encode(__m512 v) { return encode_fp8<M, B, Top>(v); }
  DNNB_AVX512_INLINE static void store(uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  DNNB_AVX512_INLINE static void store(uint8_t* p, __m128i v, __mmask16 m) { _mm_mask_storeu_epi8(p, m, v); }
  DNNB_AVX512_INLINE static __m512i join(const __m128i (&v)[4]) {
    __m512i r = _mm512_castsi128_si512(v[0]);
    r = _mm512_inserti32x4(r, v[1], 1);
    r = _mm512_inserti32x4(r, v[2], 2);
    return _mm512_inserti32x4(r, v[3], 3);
  }
  DNNB_AVX512_INLINE static void stream4(uint8_t* p, const __m128i (&v)[4]) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(p), join(v));
  }
  DNNB_AVX512_INLINE static void store4(uint8_t* p, const __m128i (&v)[4]) { _mm512_storeu_si512(p, join(v)); }
};
using DstE4M3 = DstFp8<3, 7, 0x7E>;  // overflow and Inf saturate to 448 (torch 2.15)
using DstE5M2 = DstFp8<2, 15, 0x7C>;  // overflow and Inf give Inf

// ---- One span: n contiguous elements ------------------------------------------------------

// y[0, n) = cast(x[0, n)). stream: 64-byte non-temporal stores from the first 64-byte boundary
// of y on (masked regular stores before it), 64 elements per step; the tail in masked vectors.
template <class S, class D>
DNNB_AVX512 void cast_span(const typename S::storage* x, typename D::storage* y, int64_t n, bool stream) {
  using T = typename D::storage;
  auto one = [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    if (m == 0xFFFF)
      D::store(y + i, D::encode(S::load(x + i)));
    else
      D::store(y + i, D::encode(S::load(x + i, m)), m);
  };
  auto four = [&](int64_t i, bool nt) DNNB_AVX512_LAMBDA {
    typename D::packed v[4];
    for (int k = 0; k < 4; ++k) v[k] = D::encode(S::load(x + i + 16 * k));
    if (nt)
      D::stream4(y + i, v);
    else
      D::store4(y + i, v);
  };
  int64_t i = 0;
  if (stream && reinterpret_cast<uintptr_t>(y) % sizeof(T) == 0) {
    const int64_t misaligned = static_cast<int64_t>((reinterpret_cast<uintptr_t>(y) % 64) / sizeof(T));
    const int64_t head = std::min(n, misaligned == 0 ? 0 : static_cast<int64_t>(64 / sizeof(T)) - misaligned);
    for (; i < head; i += 16) one(i, tail_mask(std::min<int64_t>(16, head - i)));
    i = head;
    for (; i + 64 <= n; i += 64) four(i, true);
  }
  for (; i + 64 <= n; i += 64) four(i, false);
  for (; i < n; i += 16) one(i, n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i));
}

// ---- The call --------------------------------------------------------------------------------

constexpr int64_t kTile = 8192;

// True when the view reads element i of its logical shape from offset i.
bool dense(const Tensor& t) {
  const Shape strides = contiguous_strides(t.shape);
  for (size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] > 1 && t.strides[d] != strides[d]) return false;
  return true;
}

HostRows one_row(const Tensor& t) {
  HostRows h;
  h.data = static_cast<char*>(t.host_data());
  h.element_size = dtype_size(t.dtype);
  h.index.rows = 1;
  h.index.cols = t.numel();
  h.index.col_stride = 1;
  return h;
}

template <class S, class D>
Status run_pair(const Tensor& x, Tensor& y) {
  using TS = typename S::storage;
  using TD = typename D::storage;
  HostRows in, out;
  if (dense(x) && dense(y)) {
    in = one_row(x);
    out = one_row(y);
  } else {
    auto xr = host_rows(x);
    if (!xr) return xr.status();
    auto yr = host_rows(y);
    if (!yr) return yr.status();
    in = *xr;
    out = *yr;
    if (in.rows() != out.rows() || in.cols() != out.cols())
      return Status::unsupported("avx512 cast: x " + x.describe() + " and y " + y.describe() +
                                 " do not split into the same rows");
  }
  const int64_t rows = out.rows(), cols = out.cols();
  if (rows * cols == 0) return Status::ok();
  const bool stream = stream_rows(out, tensor_bytes(x));
  const int64_t tiles = (cols + kTile - 1) / kTile;
  parallel_tasks(rows * tiles, rows * cols, [&](int64_t task) {
    const int64_t r = task / tiles, c0 = (task % tiles) * kTile, n = std::min(kTile, cols - c0);
    const TS* src = read_span<TS>(in, r, c0, n, 0);
    TD* dst = write_span<TD>(out, r, c0, n, 1);
    if constexpr (std::is_same_v<S, D>)
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(TS));
    else
      cast_span<S, D>(src, dst, n, stream);
    commit_span(out, r, c0, n, dst);
  });
  return Status::ok();
}

// f(S{}) for the source format of `dtype`, then g(D{}) for the target: one instantiation per pair.
template <class F>
Status with_source(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(SrcF32{});
    case DType::f16: return f(SrcF16{});
    case DType::bf16: return f(SrcBF16{});
    case DType::f8_e4m3fn: return f(SrcE4M3{});
    case DType::f8_e5m2: return f(SrcE5M2{});
    default: return Status::unsupported(std::string("avx512 cast: no source format ") + dtype_name(dtype));
  }
}
template <class F>
Status with_target(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(DstF32{});
    case DType::f16: return f(DstF16{});
    case DType::bf16: return f(DstBF16{});
    case DType::f8_e4m3fn: return f(DstE4M3{});
    case DType::f8_e5m2: return f(DstE5M2{});
    default: return Status::unsupported(std::string("avx512 cast: no target format ") + dtype_name(dtype));
  }
}
Status run_cast(OpCall& call) {
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("avx512 cast: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  Tensor& y = call.outputs[0];
  if (x.shape != y.shape) return Status::bad_input("avx512 cast: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (x.host_data() == nullptr || y.host_data() == nullptr) return Status::bad_input("avx512 cast: tensors not in host memory");
  if (x.dtype == y.dtype) {
    switch (x.dtype) {
      case DType::f32: return run_pair<SrcF32, SrcF32>(x, y);
      case DType::f16:
      case DType::bf16: return run_pair<SrcF16, SrcF16>(x, y);  // 16 bits copied, whatever they encode
      default: return run_pair<SrcE4M3, SrcE4M3>(x, y);        // 8 bits copied
    }
  }
  return with_source(x.dtype, [&](auto s) {
    return with_target(y.dtype, [&](auto d) { return run_pair<decltype(s), decltype(d)>(x, y); });
  });
}

Status cast_supports(const Problem& problem, const DeviceRuntime&) {
  auto target = ops::cast_target(problem);
  return target ? Status::ok() : target.status();
}

DNNB_REGISTER(register_kernel("cast", ops::cast_dtypes(), cast_supports, run_cast));

}  // namespace
}  // namespace dnnb::avx512
