// quantize_linear on AVX-512: y = clamp(nearbyint(x * (1 / scale)) + zp, qmin, qmax), 16 lanes a
// step, bit for bit suites/ops/qlinear_desc.h's quantize_value (docs/ops-family4.md, "quantize_linear
// and dequantize_linear"): VMULPS by the f32 reciprocal, VRNDSCALEPS
// to nearest even, VMAXPS / VMINPS against qmin - zp and qmax - zp (VMAXPS returns its second
// operand for a NaN lane: qmin, as fmax), VCVTPS2DQ (exact: an integer in range), VPADDD of the
// zero point, VPMOVDB to bytes (the value is already in the byte's range, i8 or u8 alike).
// Layout, threads and channels: kernels/avx512/qlinear.h.
#include "kernels/avx512/qlinear.h"

namespace dnnb::avx512 {
namespace {

struct Quantize {
  using Src = float;
  using Dst = uint8_t;  // the bytes of an i8 or u8 y
  const qlinear::Params* p;

  DNNB_AVX512_INLINE static __m128i step(__m512 x, __m512 inv, __m512 lo, __m512 hi, __m512i zp) {
    __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), zp));
  }
  // n elements of one channel c.
  DNNB_AVX512_INLINE void run(const float* x, uint8_t* y, int64_t n, int64_t c) const {
    const __m512 inv = _mm512_set1_ps(p->factor[c]), lo = _mm512_set1_ps(p->lo[c]), hi = _mm512_set1_ps(p->hi[c]);
    const __m512i zp = _mm512_set1_epi32(p->zp[c]);
    int64_t i = 0;
    for (; i + 64 <= n; i += 64)  // four independent vectors a step
      for (int u = 0; u < 4; ++u)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16 * u), step(_mm512_loadu_ps(x + i + 16 * u), inv, lo, hi, zp));
    for (; i < n; i += 16) {
      const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : tail_mask(n - i);
      _mm_mask_storeu_epi8(y + i, m, step(_mm512_maskz_loadu_ps(m, x + i), inv, lo, hi, zp));
    }
  }
  // n <= 16 elements whose channels are the lanes of `ch`.
  DNNB_AVX512_INLINE void lanes(const float* x, uint8_t* y, int64_t n, __m512i ch) const {
    const __mmask16 m = tail_mask(n);  // n = 16 gives 0xFFFF
    const __m512 inv = _mm512_i32gather_ps(ch, p->factor.data(), 4), lo = _mm512_i32gather_ps(ch, p->lo.data(), 4),
                 hi = _mm512_i32gather_ps(ch, p->hi.data(), 4);
    const __m512i zp = _mm512_i32gather_epi32(ch, p->zp.data(), 4);
    _mm_mask_storeu_epi8(y, m, step(_mm512_maskz_loadu_ps(m, x), inv, lo, hi, zp));
  }
};

Status run_quantize(OpCall& call) {
  if (call.inputs.size() != 3 || call.outputs.size() != 1)
    return Status::bad_input("avx512 quantize_linear: expects inputs x, scale, zero_point and output y");
  auto d = ops::qlinear_desc(call.problem, true);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  Tensor& y = call.outputs[0];
  if (x.dtype != DType::f32 || y.dtype != d->qtype)
    return Status::bad_input(std::string("avx512 quantize_linear: x is ") + dtype_name(x.dtype) + " and y " +
                             dtype_name(y.dtype) + ", the problem quantizes f32 to " + dtype_name(d->qtype));
  auto params = qlinear::read_params(*d, call.inputs[1], call.inputs[2], true);
  if (!params) return params.status();
  return qlinear::drive(Quantize{&*params}, x, y, *d, "quantize_linear");
}

Status quantize_supports(const Problem& problem, const DeviceRuntime&) {
  auto d = ops::qlinear_desc(problem, true);
  return d ? Status::ok() : d.status();
}

DNNB_REGISTER(register_kernel("quantize_linear", {DType::f32}, quantize_supports, run_quantize));

}  // namespace
}  // namespace dnnb::avx512
