// relu, sigmoid, tanh, exp, silu, gelu, gelu_tanh: y = f(x) per element. One driver
// (elementwise.h); this file is the table of vector functions f, each rounding once to
// the output dtype from an f32 result. Accuracy of each f: docs/avx512.md.
#include <vector>

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
  static constexpr bool kBf16Table = true;             // the bf16 default looks y up (below)
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

// Tables for 16-bit inputs: a 16-bit input has 65536 values, so y = f(x) can be looked up in a
// table of f's results for every one of them, made once per op and format by this file's own
// vector function F<half> (the computed results, bit for bit but for NaN payloads; test
// Avx512UnaryTable). One gather per 16 elements instead of 20-35 vector uops of math, which
// bind these ops on the GPU machines' VMs (docs/avx512.md, "Sixth round"). ggml keeps such a
// table for f16 GELU (ggml_table_gelu_f16, ggml-cpu/vec.h, 128 KB). Ours holds f32 (256 KiB,
// in L2; the values a tensor of activations takes sit in a few KiB of it), which the driver's
// encoder turns back into the same 16 bits.
template <class Fmt>
DNNB_AVX512_INLINE __m512i code_of(__m512 x) {
  // x was decoded from 16 bits, so both inverses below are exact.
  if constexpr (std::is_same_v<Fmt, BF16>) return _mm512_srli_epi32(_mm512_castps_si512(x), 16);
  else return _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
template <class Fmt>
struct TableLookup {
  static constexpr bool kQuads = true;  // 4 gathers in flight per step
  const float* table;
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const {
    Vecs<K> y;
    for (int k = 0; k < K; ++k) y.v[k] = _mm512_i32gather_ps(code_of<Fmt>(v[0].v[k]), table, 4);
    return y;
  }
};
// f(x) for every 16-bit code, rounded to Fmt as the computed path's stores round it, kept as f32.
template <class Fmt, template <Accuracy> class F>
DNNB_AVX512 std::vector<float> make_unary_table() {
  std::vector<uint16_t> codes(65536), results(65536);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
  const F<Accuracy::half> f;
  for (size_t i = 0; i < codes.size(); i += 32) {
    const Vecs<2> x = Fmt::load2(codes.data() + i);
    Fmt::store2(results.data() + i, f(&x));
  }
  std::vector<float> table(results.size());
  for (size_t i = 0; i < results.size(); ++i) table[i] = Fmt::to_float(results[i]);
  return table;
}
template <class Fmt, template <Accuracy> class F>
const float* unary_table() {
  static const std::vector<float> table = make_unary_table<Fmt, F>();  // thread-safe, once
  return table.data();
}
// The default: y computed by F, except for bf16 where F has kBf16Table: there the table, for the
// four ops whose math costs ~25-35 vector uops per 16 elements. Session 16, 16384 x 8192, two
// hosts of the GPU machines, two interleaved rounds each, time with the table over the computed
// time (docs/avx512.md, "Sixth round"): gelu 0.79 and 0.63, gelu_tanh 0.77 and 0.64, silu 0.88
// and 0.96, sigmoid 1.01 (0.79-1.22) and 0.80. Cheaper math does not gain: tanh (21.5 uops)
// 1.05 and 0.94, exp (16.5) 0.97 and 0.99; nor does f16, which pays two more uops to recover its
// codes (exp 1.27, tanh 1.17). Variant `math` keeps the computed bf16 results of the four.
template <template <Accuracy> class F>
bool register_unary(const char* op) {
  return register_kernel(op, {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto fmt) {
      using Fmt = decltype(fmt);
      if constexpr (std::is_same_v<Fmt, BF16> && requires { requires F<Accuracy::half>::kBf16Table; })
        return TableLookup<Fmt>{unary_table<Fmt, F>()};
      else
        return F<accuracy_for<Fmt>>{};
    });
  });
}
// Variants `table` (f16 and bf16: every op looks y up) and `math` (bf16, the ops whose default
// looks it up: y computed by F<half>), to time each form against the other.
template <template <Accuracy> class F>
bool register_unary_table(const char* op) {
  return register_kernel(op, {DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto fmt) {
      using Fmt = decltype(fmt);
      if constexpr (std::is_same_v<Fmt, F32>) return F<Accuracy::full>{};  // not registered for f32
      else return TableLookup<Fmt>{unary_table<Fmt, F>()};
    });
  }, "table");
}
template <template <Accuracy> class F>
bool register_unary_math(const char* op) {
  return register_kernel(op, {DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<1>(call, {&call.inputs.at(0)}, [](auto fmt) { return F<accuracy_for<decltype(fmt)>>{}; });
  }, "math");
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
DNNB_REGISTER(register_unary_table<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary_table<Tanh>("tanh"));
DNNB_REGISTER(register_unary_table<Exp>("exp"));
DNNB_REGISTER(register_unary_table<Silu>("silu"));
DNNB_REGISTER(register_unary_table<Gelu>("gelu"));
DNNB_REGISTER(register_unary_table<GeluTanh>("gelu_tanh"));
DNNB_REGISTER(register_unary_math<Sigmoid>("sigmoid"));
DNNB_REGISTER(register_unary_math<Silu>("silu"));
DNNB_REGISTER(register_unary_math<Gelu>("gelu"));
DNNB_REGISTER(register_unary_math<GeluTanh>("gelu_tanh"));

}  // namespace
}  // namespace dnnb::avx512
