// add, sub, mul, div: y = a op b with numpy broadcasting of both to y's shape (a may be a
// non-contiguous view: `layout`). One driver (elementwise.h), a table of four operators;
// each is one correctly rounded f32 operation, then one rounding to the output dtype.
#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/elementwise.h"

namespace dnnb::avx512 {
namespace {

struct Add {
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return add(v[0], v[1]); }
};
struct Sub {
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return sub(v[0], v[1]); }
};
struct Mul {
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return mul(v[0], v[1]); }
};
struct Div {
  template <int K>
  DNNB_AVX512_INLINE Vecs<K> operator()(const Vecs<K>* v) const { return div(v[0], v[1]); }
};

template <class F>
bool register_binary(const char* op) {
  return register_kernel(op, {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return elementwise<2>(call, {&call.inputs.at(0), &call.inputs.at(1)}, [](auto) { return F{}; });
  });
}

DNNB_REGISTER(register_binary<Add>("add"));
DNNB_REGISTER(register_binary<Sub>("sub"));
DNNB_REGISTER(register_binary<Mul>("mul"));
DNNB_REGISTER(register_binary<Div>("div"));

}  // namespace
}  // namespace dnnb::avx512
