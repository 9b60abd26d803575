// swiglu_bwd: da = dy b silu'(a), db = dy silu(a), with s = sigmoid(a) and its complement
// 1 - s from one exponential (glu_bwd.h, sigmoid_pair): silu(a) = a s and
// silu'(a) = s (1 + a (1 - s)), the inner term one FMA (no rounding of a (1 - s) before the
// add, where it cancels near silu's minimum at a = -1.28). One pass over a, b, dy writing da
// and db (glu_bwd.h); f32 math, each output rounded once; accuracy tier by the output dtype.
#include "kernels/avx512/glu_bwd.h"

namespace dnnb::avx512 {
namespace {

template <Accuracy A>
struct SwiGluBwd {
  template <int K>
  DNNB_AVX512_INLINE GluGrads<K> operator()(const Vecs<K>* v) const {
    const Vecs<K>& a = v[0];
    Vecs<K> s, one_minus_s;
    sigmoid_pair<A>(a, s, one_minus_s);
    const Vecs<K> slope = mul(s, fmadd(a, one_minus_s, splat<K>(1.0f)));
    return {mul(mul(v[2], v[1]), slope), mul(v[2], mul(a, s))};
  }
};

Status run_swiglu_bwd(OpCall& call) {
  return glu_bwd(call, [](auto fmt) { return SwiGluBwd<accuracy_for<decltype(fmt)>>{}; });
}

DNNB_REGISTER(register_kernel("swiglu_bwd", {DType::f32, DType::f16, DType::bf16}, nullptr, run_swiglu_bwd));

}  // namespace
}  // namespace dnnb::avx512
