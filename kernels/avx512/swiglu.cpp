// swiglu: y = silu(a) b = a sigmoid(a) b per element, through the elementwise driver
// (elementwise.h: contiguous tensors as one long row, strided ones gathered per row). Computed
// in f32 and rounded once to the output dtype; the sigmoid's accuracy tier follows the output
// (avx512_math.h: full for f32, half for f16/bf16).
#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

template <Accuracy A>
struct SwiGlu {
  // The 16-bit tier's chain is short enough for four vectors per step; f32's VDIVPS sigmoid
  // keeps two (as silu, unary.cpp).
  static constexpr bool kQuads = A == Accuracy::half;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const {
    return mul(mul(v[0], sigmoid_v<A>(v[0])), v[1]);
  }
};

Status run_swiglu(OpCall& call) {
  return elementwise<2>(call, {&call.inputs.at(0), &call.inputs.at(1)},
                        [](auto fmt) { return SwiGlu<accuracy_for<decltype(fmt)>>{}; });
}

DNNB_REGISTER(register_kernel("swiglu", {DType::f32, DType::f16, DType::bf16}, nullptr, run_swiglu));

}  // namespace
}  // namespace dnnb::avx512
