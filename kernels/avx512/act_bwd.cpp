// gelu_bwd and silu_bwd: dx = dy f'(x) per element, through the elementwise driver
// (elementwise.h) with x and dy as its two inputs, the slopes of act_grad.h computed in f32 at
// the output dtype's accuracy tier and dx rounded once. kQuads (64 columns per step, four
// dependency chains) for the 16-bit tiers, whose chains are long against the 6 bytes an element
// moves; the f32 chains keep two, as the forward activations do (unary.cpp).
#include "kernels/avx512/act_grad.h"
#include "kernels/avx512/elementwise.h"
#include "suites/ops/act_bwd_common.h"

namespace dnnb::avx512 {
namespace {

template <Accuracy A>
struct GeluBwd {
  static constexpr bool kQuads = A == Accuracy::half;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[1], gelu_slope<A>(v[0])); }
};
template <Accuracy A>
struct GeluTanhBwd {
  static constexpr bool kQuads = A == Accuracy::half;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[1], gelu_tanh_slope<A>(v[0])); }
};
template <Accuracy A>
struct SiluBwd {
  static constexpr bool kQuads = A == Accuracy::half;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[1], silu_slope<A>(v[0])); }
};

template <template <Accuracy> class F>
Status run_act_bwd(OpCall& call) {
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("avx512 " + call.problem.op + ": expects inputs (x, dy) and output dx");
  for (const Tensor& t : call.inputs)
    if (t.shape != call.outputs[0].shape)
      return Status::bad_input("avx512 " + call.problem.op + ": input " + t.describe() + " does not have dx's shape");
  return elementwise<2>(call, {&call.inputs[0], &call.inputs[1]},
                        [](auto fmt) { return F<accuracy_for<decltype(fmt)>>{}; });
}

Status run_gelu_bwd(OpCall& call) {
  auto tanh_form = ops::gelu_bwd_tanh(call.problem);
  if (!tanh_form) return tanh_form.status();
  return *tanh_form ? run_act_bwd<GeluTanhBwd>(call) : run_act_bwd<GeluBwd>(call);
}

DNNB_REGISTER(register_kernel("gelu_bwd", {DType::f32, DType::f16, DType::bf16}, nullptr, run_gelu_bwd));
DNNB_REGISTER(register_kernel("silu_bwd", {DType::f32, DType::f16, DType::bf16}, nullptr, run_act_bwd<SiluBwd>));

}  // namespace
}  // namespace dnnb::avx512
