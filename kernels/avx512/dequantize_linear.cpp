// dequantize_linear on AVX-512: y = f32(x - zp) * scale, 16 lanes a step, bit for bit
// suites/ops/qlinear_desc.h's dequantize_value (docs/ops-family4.md, "quantize_linear and
// dequantize_linear"): VPMOVSXBD / VPMOVZXBD, VPSUBD of the zero
// point, VCVTDQ2PS (exact), one VMULPS. y is four times x's bytes: past the last-level cache
// (stream_output) whole 64-byte vectors are written with non-temporal stores.
// Layout, threads and channels: kernels/avx512/qlinear.h.
#include "kernels/avx512/qlinear.h"

namespace dnnb::avx512 {
namespace {

template <bool kSigned>
struct Dequantize {
  using Src = uint8_t;  // the bytes of an i8 or u8 x
  using Dst = float;
  const qlinear::Params* p;
  bool stream = false;

  DNNB_AVX512_INLINE static __m512 step(__m128i q, __m512 scale, __m512i zp) {
    const __m512i w = kSigned ? _mm512_cvtepi8_epi32(q) : _mm512_cvtepu8_epi32(q);
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(w, zp)), scale);
  }
  DNNB_AVX512_INLINE void run(const uint8_t* x, float* y, int64_t n, int64_t c) const {
    const __m512 scale = _mm512_set1_ps(p->factor[c]);
    const __m512i zp = _mm512_set1_epi32(p->zp[c]);
    int64_t i = 0;
    if (stream) {  // masked regular stores up to a 64-byte boundary, then streaming whole vectors
      const int64_t head = std::min<int64_t>(n, ((64 - reinterpret_cast<uintptr_t>(y) % 64) % 64) / 4);
      if (reinterpret_cast<uintptr_t>(y) % 4 == 0 && head > 0) {
        const __mmask16 m = tail_mask(head);
        _mm512_mask_storeu_ps(y, m, step(_mm_maskz_loadu_epi8(m, x), scale, zp));
        i = head;
      }
      if (reinterpret_cast<uintptr_t>(y + i) % 64 == 0)
        for (; i + 16 <= n; i += 16)
          _mm512_stream_ps(y + i, step(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), scale, zp));
    }
    for (; i + 64 <= n; i += 64)
      for (int u = 0; u < 4; ++u)
        _mm512_storeu_ps(y + i + 16 * u, step(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 16 * u)), scale, zp));
    for (; i < n; i += 16) {
      const __mmask16 m = tail_mask(std::min<int64_t>(16, n - i));
      _mm512_mask_storeu_ps(y + i, m, step(_mm_maskz_loadu_epi8(m, x + i), scale, zp));
    }
  }
  DNNB_AVX512_INLINE void lanes(const uint8_t* x, float* y, int64_t n, __m512i ch) const {
    const __mmask16 m = tail_mask(n);  // n = 16 gives 0xFFFF
    const __m512 scale = _mm512_i32gather_ps(ch, p->factor.data(), 4);
    const __m512i zp = _mm512_i32gather_epi32(ch, p->zp.data(), 4);
    _mm512_mask_storeu_ps(y, m, step(_mm_maskz_loadu_epi8(m, x), scale, zp));
  }
};

Status run_dequantize(OpCall& call) {
  if (call.inputs.size() != 3 || call.outputs.size() != 1)
    return Status::bad_input("avx512 dequantize_linear: expects inputs x, scale, zero_point and output y");
  auto d = ops::qlinear_desc(call.problem, false);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  Tensor& y = call.outputs[0];
  if (x.dtype != d->qtype || y.dtype != DType::f32)
    return Status::bad_input(std::string("avx512 dequantize_linear: x is ") + dtype_name(x.dtype) + " and y " +
                             dtype_name(y.dtype) + ", the problem dequantizes " + dtype_name(d->qtype) + " to f32");
  auto params = qlinear::read_params(*d, call.inputs[1], call.inputs[2], false);
  if (!params) return params.status();
  const bool stream = stream_output(tensor_bytes(y), tensor_bytes(x));
  if (x.dtype == DType::i8) return qlinear::drive(Dequantize<true>{&*params, stream}, x, y, *d, "dequantize_linear");
  return qlinear::drive(Dequantize<false>{&*params, stream}, x, y, *d, "dequantize_linear");
}

Status dequantize_supports(const Problem& problem, const DeviceRuntime&) {
  auto d = ops::qlinear_desc(problem, false);
  return d ? Status::ok() : d.status();
}

DNNB_REGISTER(register_kernel("dequantize_linear", {DType::i8, DType::u8}, dequantize_supports, run_dequantize));

}  // namespace
}  // namespace dnnb::avx512
