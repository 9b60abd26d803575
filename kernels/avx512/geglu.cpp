// geglu: y = gelu_tanh(a) b per element, gelu_tanh(a) = a sigmoid(2u) with
// u = sqrt(2/pi) (a + 0.044715 a^3) (avx512_math.h, gelu_tanh_v: no 1 + tanh cancellation for
// a < 0), through the elementwise driver (elementwise.h). Computed in f32 and rounded once to
// the output dtype; the sigmoid's accuracy tier follows the output dtype.
#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

template <Accuracy A>
struct GeGlu {
  static constexpr bool kQuads = A == Accuracy::half;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(gelu_tanh_v<A>(v[0]), v[1]); }
};

Status run_geglu(OpCall& call) {
  return elementwise<2>(call, {&call.inputs.at(0), &call.inputs.at(1)},
                        [](auto fmt) { return GeGlu<accuracy_for<decltype(fmt)>>{}; });
}

DNNB_REGISTER(register_kernel("geglu", {DType::f32, DType::f16, DType::bf16}, nullptr, run_geglu));

}  // namespace
}  // namespace dnnb::avx512
