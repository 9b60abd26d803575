// relu, sigmoid, tanh, exp, silu, gelu, gelu_tanh: y = f(x) per element. One driver
// (elementwise.h); this file lists the vector functions f, each rounding once to the output
// dtype from an f32 result (bf16 sigmoid, silu, gelu and gelu_tanh by default through a
// lookup table of those same results, below). Accuracy of each f: docs/avx512.md.
#include <vector>

#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

// Each f is a template on the accuracy tier (avx512_math.h: full for f32 outputs, half for
// outputs rounded to f16/bf16) and works on K vectors at a time (elementwise.h). kQuads: the
// driver's body goes 64 columns per step as one Vecs<4>, four dependency chains instead of
// two, which fills the issue slots a long transcendental chain leaves idle. f32 exp, sigmoid
// and silu keep K = 2: their chains are short enough that memory sets their pace, and a step
// of four full-line f32 stores streams worse than a step of two. relu has no chain to overlap.
template <Accuracy>
struct Relu {
  // max(0, x) with VMAXPS returning x when x is NaN (NaN propagates, as torch.relu).
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return max_keep_nan(0.0f, v[0]); }
};
template <Accuracy A>
struct Sigmoid {
  static constexpr bool kQuads = A == Accuracy::half;  // f32: see the note above
  static constexpr bool kBf16Table = true;             // the bf16 default looks y up (below)
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return sigmoid_v<A>(v[0]); }
};
template <Accuracy A>
struct Tanh {
  // f32 (full) tanh keeps both branches live, and 4 vectors per step spill registers; the
  // half tier's single rational function has room for four.
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
  static constexpr bool kBf16Table = true;             // the bf16 default looks y up (below)
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[0], sigmoid_v<A>(v[0])); }
};
template <Accuracy A>
struct Gelu {
  static constexpr bool kQuads = true;
  static constexpr bool kBf16Table = true;
  // x Phi(x), with Phi accurate on the negative tail (no 1 + erf cancellation).
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[0], normal_cdf_v<A>(v[0])); }
};
template <Accuracy A>
struct GeluTanh {
  static constexpr bool kQuads = true;
  static constexpr bool kBf16Table = true;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return gelu_tanh_v<A>(v[0]); }
};

// bf16 tables: a bf16 input has 65536 values, so y = f(x) can be looked up in a table of f's
// results for every one of them, made once per op by this file's own vector function F<half>
// (the computed results, bit for bit but for NaN payloads: test Avx512UnaryTable). One gather
// per 16 elements replaces the 25-35 vector uops of sigmoid, silu, gelu and gelu_tanh, which
// bind those ops on hosts that issue 512-bit uops at half rate (docs/avx512.md). The table
// holds f32 (256 KiB, in L2; the values a tensor of activations takes sit in a few KiB of it),
// which the driver's encoder turns back into the same 16 bits. The other ops stay computed:
// tanh (~21 uops) and exp (~16) cost about what a 16-wide gather does, and an f16 code costs
// two more uops to recover from f32 (VCVTPS2PH, VPMOVZXWD) than a bf16 code's shift.
struct Bf16TableLookup {
  static constexpr bool kQuads = true;  // 4 gathers in flight per step
  const float* table;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const {
    Vecs<K> y;
    // x was widened from bf16 by a 16-bit shift, so shifting back gives its code exactly.
    for (int k = 0; k < K; ++k)
      y.v[k] = _mm512_i32gather_ps(_mm512_srli_epi32(_mm512_castps_si512(v[0].v[k]), 16), table, 4);
    return y;
  }
};
// f(x) for every bf16 code, rounded to bf16 as the computed path's stores round it, kept as f32.
template <template <Accuracy> class F>
DNNB_AVX512 std::vector<float> make_bf16_table() {
  std::vector<uint16_t> codes(65536), results(65536);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
  const F<Accuracy::half> f;
  for (size_t i = 0; i < codes.size(); i += 32) {
    const Vecs<2> x = BF16::load2(codes.data() + i);
    BF16::store2(results.data() + i, f(&x));
  }
  std::vector<float> table(results.size());
  for (size_t i = 0; i < results.size(); ++i) table[i] = BF16::to_float(results[i]);
  return table;
}
template <template <Accuracy> class F>
const float* bf16_table() {
  static const std::vector<float> table = make_bf16_table<F>();  // thread-safe, once
  return table.data();
}

// The default: y computed by F, except for bf16 where F has kBf16Table: there the table.
template <template <Accuracy> class F>
bool register_unary(const char* op) {
  return register_kernel(op, {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto fmt) {
      using Fmt = decltype(fmt);
      if constexpr (std::is_same_v<Fmt, BF16> && requires { requires F<Accuracy::half>::kBf16Table; })
        return Bf16TableLookup{bf16_table<F>()};
      else
        return F<accuracy_for<Fmt>>{};
    });
  });
}
// Variant `math` of the ops whose bf16 default looks y up: y computed by F<half>, the same
// results without the table.
template <template <Accuracy> class F>
bool register_unary_math(const char* op) {
  static_assert(requires { requires F<Accuracy::half>::kBf16Table; }, "only ops whose bf16 default is a table");
  return register_kernel(
      op, {DType::bf16}, nullptr,
      [](OpCall& call) {
        return elementwise<1>(call, {&call.inputs.at(0)}, [](auto fmt) { return F<accuracy_for<decltype(fmt)>>{}; });
      },
      "math",
      "On a CPU with slow gathers, or when the op shares its core's L2 with work that the 256 KiB "
      "bf16 lookup table would evict: y is computed per element instead.");
}

DNNB_REGISTER(register_unary<Relu>("relu"));
DNNB_REGISTER(register_unary<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary<Tanh>("tanh"));
DNNB_REGISTER(register_unary<Exp>("exp"));
DNNB_REGISTER(register_unary<Silu>("silu"));
DNNB_REGISTER(register_unary<Gelu>("gelu"));
DNNB_REGISTER(register_unary<GeluTanh>("gelu_tanh"));
DNNB_REGISTER(register_unary_math<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary_math<Silu>("silu"));
DNNB_REGISTER(register_unary_math<Gelu>("gelu"));
DNNB_REGISTER(register_unary_math<GeluTanh>("gelu_tanh"));

}  // namespace
}  // namespace dnnb::avx512
