// geglu_bwd: da = dy b g'(a), db = dy g(a), g = gelu_tanh. With k = sqrt(2/pi), c = 0.044715,
// u = k (a + c a^3) and s = sigmoid(2u) = (1 + tanh u) / 2 (so 1 - tanh^2 u = 4 s (1 - s)):
//   g(a) = a s,  g'(a) = s + 2 a s (1 - s) k (1 + 3 c a^2) = s (1 + a (1 - s) (2k + 6kc a^2)),
// s and 1 - s from one exponential without cancellation (glu_bwd.h, sigmoid_pair), where
// torch's 1 + tanh and 1 - tanh^2 cancel for |a| beyond ~3; the sum with 1 is one FMA. One
// pass over a, b, dy writing da and db (glu_bwd.h); f32 math, each output rounded once.
#include "kernels/avx512/glu_bwd.h"

namespace dnnb::avx512 {
namespace {

constexpr float kTwoK = 1.5957691216057308f;       // 2 sqrt(2/pi)
constexpr float kSixKC = 0.21406444881780076f;     // 6 sqrt(2/pi) 0.044715
constexpr float kTwoKC = 0.071354816272600245f;    // 2 sqrt(2/pi) 0.044715

template <Accuracy A>
struct GeGluBwd {
  template <int K>
  DNNB_AVX512_INLINE GluGrads<K> operator()(const Vecs<K>* v) const {
    const Vecs<K>& a = v[0];
    const Vecs<K> a2 = mul(a, a);
    const Vecs<K> two_u = mul(a, fmadd(a2, splat<K>(kTwoKC), splat<K>(kTwoK)));
    Vecs<K> s, one_minus_s;
    sigmoid_pair<A>(two_u, s, one_minus_s);
    const Vecs<K> w = fmadd(a2, splat<K>(kSixKC), splat<K>(kTwoK));
    const Vecs<K> slope = mul(s, fmadd(mul(a, one_minus_s), w, splat<K>(1.0f)));
    return {mul(mul(v[2], v[1]), slope), mul(v[2], mul(a, s))};
  }
};

Status run_geglu_bwd(OpCall& call) {
  return glu_bwd(call, [](auto fmt) { return GeGluBwd<accuracy_for<decltype(fmt)>>{}; });
}

DNNB_REGISTER(register_kernel("geglu_bwd", {DType::f32, DType::f16, DType::bf16}, nullptr, run_geglu_bwd));

}  // namespace
}  // namespace dnnb::avx512
