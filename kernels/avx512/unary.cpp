// relu, sigmoid, tanh, exp, silu, gelu, gelu_tanh: y = f(x) per element. One driver
// (elementwise.h); this file is the table of vector functions f, each rounding once to
// the output dtype from an f32 result. Accuracy of each f: docs/avx512.md.
#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

struct Relu {
  // max(0, x) with VMAXPS returning x when x is NaN (NaN propagates, as torch.relu).
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const { return _mm512_max_ps(_mm512_setzero_ps(), v[0]); }
};
struct Sigmoid {
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const { return sigmoid_ps(v[0]); }
};
struct Tanh {
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const { return tanh_ps(v[0]); }
};
struct Exp {
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const { return exp_ps(v[0]); }
};
struct Silu {
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const { return _mm512_mul_ps(v[0], sigmoid_ps(v[0])); }
};
struct Gelu {
  // x Phi(x), with Phi accurate on the negative tail (no 1 + erf cancellation).
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const { return _mm512_mul_ps(v[0], normal_cdf_ps(v[0])); }
};
struct GeluTanh {
  // 0.5 x (1 + tanh u) = x sigmoid(2u), u = sqrt(2/pi) x (1 + 0.044715 x^2): the sigmoid form
  // keeps relative accuracy where 1 + tanh u cancels (x << 0).
  DNNB_AVX512_INLINE __m512 operator()(const __m512* v) const {
    const __m512 x = v[0];
    const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(0.044715f), _mm512_set1_ps(1.0f));
    const __m512 two_u = _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.59576912160573071f)), inner);
    return _mm512_mul_ps(x, sigmoid_ps(two_u));
  }
};

template <class F>
bool register_unary(const char* op) {
  return register_kernel(op, {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto) { return F{}; });
  });
}

DNNB_REGISTER(register_unary<Relu>("relu"));
DNNB_REGISTER(register_unary<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary<Tanh>("tanh"));
DNNB_REGISTER(register_unary<Exp>("exp"));
DNNB_REGISTER(register_unary<Silu>("silu"));
DNNB_REGISTER(register_unary<Gelu>("gelu"));
DNNB_REGISTER(register_unary<GeluTanh>("gelu_tanh"));

}  // namespace
}  // namespace dnnb::avx512
