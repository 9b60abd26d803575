// lerp: y = a + w (b - a), w a scalar (`weight`, default 0.5) or a tensor broadcast to the
// shape (`w`). Evaluated as torch does, from the nearer end: w < 0.5 ? a + w (b - a)
// : b - (b - a)(1 - w), which keeps y == b at w == 1 and halves the error near it.
#include <cmath>

#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

template <int K>
DNNB_AVX512_INLINE Vecs<K> lerp_v(const Vecs<K>& a, const Vecs<K>& b, const Vecs<K>& w) {
  const Vecs<K> diff = sub(b, a);
  const Vecs<K> from_a = fmadd(w, diff, a);
  const Vecs<K> from_b = fnmadd(diff, sub(splat<K>(1.0f), w), b);
  Masks<K> near_a;
  for (int k = 0; k < K; ++k)
    near_a.m[k] = _mm512_cmp_ps_mask(_mm512_abs_ps(w.v[k]), _mm512_set1_ps(0.5f), _CMP_LT_OQ);
  return select(near_a, from_a, from_b);
}

// A scalar weight picks its end once per call: one subtraction and one FMA per vector
// instead of both ends, a compare and a blend (7 uops), with the same formulas and rounding.
struct LerpScalarFromA {  // |w| < 0.5: a + w (b - a)
  float weight;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const {
    return fmadd(splat<K>(weight), sub(v[1], v[0]), v[0]);
  }
};
struct LerpScalarFromB {  // otherwise: b - (b - a)(1 - w)
  float one_minus_weight;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const {
    return fnmadd(sub(v[1], v[0]), splat<K>(one_minus_weight), v[1]);
  }
};
struct LerpTensor {
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return lerp_v(v[0], v[1], v[2]); }
};

Status run_lerp(OpCall& call) {
  const Tensor& a = call.inputs.at(0);
  const Tensor& b = call.inputs.at(1);
  if (call.inputs.size() >= 3)
    return elementwise<3>(call, {&a, &b, &call.inputs[2]}, [](auto) { return LerpTensor{}; });
  auto weight = call.problem.get_double("weight", 0.5);
  if (!weight) return weight.status();
  const float w = static_cast<float>(*weight);
  // NaN w: the compare in lerp_v is false, so it takes the b end too (NaN either way).
  if (std::fabs(w) < 0.5f) return elementwise<2>(call, {&a, &b}, [w](auto) { return LerpScalarFromA{w}; });
  return elementwise<2>(call, {&a, &b}, [w](auto) { return LerpScalarFromB{1.0f - w}; });
}

DNNB_REGISTER(register_kernel("lerp", {DType::f32, DType::f16, DType::bf16}, nullptr, run_lerp));

}  // namespace
}  // namespace dnnb::avx512
