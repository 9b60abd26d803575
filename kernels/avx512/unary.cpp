// relu, sigmoid, tanh, exp, silu, gelu, gelu_tanh: y = f(x) per element. One driver
// (elementwise.h); this file is the table of vector functions f, each rounding once to
// the output dtype from an f32 result. Accuracy of each f: docs/avx512.md.
#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

// Each f is a template on the accuracy tier (avx512_math.h: full for f32 outputs, half for
// outputs rounded to f16/bf16) and works on K vectors at a time (elementwise.h). kQuads: the
// driver's body goes 64 columns per step as one Vecs<4> (four dependency chains instead of
// two): 5-20% less time per element in L1 on Zen 5 for every transcendental but f32 tanh
// (docs/avx512.md, fourth round). With data from DRAM (one thread, 1024 x 8192) it also won
// for every 16-bit op and f32 gelu/gelu_tanh, but f32 exp ran 17% slower (a memory-bound
// stream: 4 full-line stores per step) and f32 sigmoid/silu showed no clear gain, so those
// keep K = 2. relu has no chain to overlap.
template <Accuracy>
struct Relu {
  // max(0, x) with VMAXPS returning x when x is NaN (NaN propagates, as torch.relu).
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return max_keep_nan(0.0f, v[0]); }
};
template <Accuracy A>
struct Sigmoid {
  static constexpr bool kQuads = A == Accuracy::half;  // f32: see the note above
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return sigmoid_v<A>(v[0]); }
};
template <Accuracy A>
struct Tanh {
  // f32 (full) tanh has both branches live: with 4 vectors per step it ran 15% slower on
  // Zen 5 (register spills); the half tier's single rational function gains a little.
  static constexpr bool kQuads = A == Accuracy::half;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return tanh_v<A>(v[0]); }
};
template <Accuracy A>
struct Exp {
  static constexpr bool kQuads = A == Accuracy::half;  // f32: see the note above
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return exp_v<A>(v[0]); }
};
template <Accuracy A>
struct Silu {
  static constexpr bool kQuads = A == Accuracy::half;  // f32: see the note above
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[0], sigmoid_v<A>(v[0])); }
};
template <Accuracy A>
struct Gelu {
  static constexpr bool kQuads = true;
  // x Phi(x), with Phi accurate on the negative tail (no 1 + erf cancellation).
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[0], normal_cdf_v<A>(v[0])); }
};
template <Accuracy A>
struct GeluTanh {
  static constexpr bool kQuads = true;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return gelu_tanh_v<A>(v[0]); }
};

template <template <Accuracy> class F>
bool register_unary(const char* op) {
  return register_kernel(op, {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto fmt) { return F<accuracy_for<decltype(fmt)>>{}; });
  });
}
// Variant `rcp`, f32 only: the f32 functions with each quotient by reciprocal estimate and a
// Newton step instead of VDIVPS (Accuracy::full_reciprocal, avx512_math.h), to time against
// the default on the Xeon (16-bit outputs already divide that way).
template <template <Accuracy> class F>
bool register_unary_reciprocal(const char* op) {
  return register_kernel(op, {DType::f32}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto) { return F<Accuracy::full_reciprocal>{}; });
  }, "rcp");
}

DNNB_REGISTER(register_unary<Relu>("relu"));
DNNB_REGISTER(register_unary<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary<Tanh>("tanh"));
DNNB_REGISTER(register_unary<Exp>("exp"));
DNNB_REGISTER(register_unary<Silu>("silu"));
DNNB_REGISTER(register_unary<Gelu>("gelu"));
DNNB_REGISTER(register_unary<GeluTanh>("gelu_tanh"));
DNNB_REGISTER(register_unary_reciprocal<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary_reciprocal<Tanh>("tanh"));
DNNB_REGISTER(register_unary_reciprocal<Silu>("silu"));
DNNB_REGISTER(register_unary_reciprocal<Gelu>("gelu"));
DNNB_REGISTER(register_unary_reciprocal<GeluTanh>("gelu_tanh"));

}  // namespace
}  // namespace dnnb::avx512
