// sum, mean, max, norm2 over the last dim: one pass over each row (row_reduce.h). When
// there are fewer rows than threads, rows split into column chunks (for_each_row). With
// DNNB_AVX512_PREFETCH=2, whole rows also prefetch the thread's next row into L2 as they go.
// max propagates NaN; norm2 is sqrt of the f32 sum of squares.
#include "kernels/avx512/row_reduce.h"

namespace dnnb::avx512 {
namespace {

enum class Op { sum, mean, max, norm2 };

constexpr Reduce kind_of(Op op) {
  return op == Op::max ? Reduce::max : op == Op::norm2 ? Reduce::sum_squares : Reduce::sum;
}

template <class Fmt, Op O>
Status run_reduce(OpCall& call) {
  using T = typename Fmt::storage;
  constexpr Reduce K = kind_of(O);
  using A = Accumulate<K>;
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto y = host_elements(call.outputs.at(0));
  if (!y) return y.status();
  const int64_t rows = x->rows(), cols = x->cols();
  if (y->rows() != rows) return Status::bad_input("avx512 reduce: output y does not have one element per row of x");
  if (O == Op::max && cols == 0) return Status::bad_input("max over an empty last dim has no value");
  for_each_row<float>(
      rows, cols,
      [&](int64_t r, int64_t c0, int64_t n) {
        // Whole rows only, and only with DNNB_AVX512_PREFETCH=2 (avx512_common.h).
        const NextRow next = n == cols ? next_row_of(*x, r, nullptr, 2) : NextRow{};
        // Prefetch ahead within unit-stride spans, and on into what follows them in memory
        // when that is the thread's next span (the next chunk, or the next row of dense rows).
        const Ahead ahead = ahead_of(*x, r, c0, n, reduce_ahead_bytes(x->element_size));
        return reduce_span<Fmt, K>(read_span<T>(*x, r, c0, n, 0), n, 0.0f, next, ahead);
      },
      [](float a, float b) { return A::merge(a, b); },
      [&](int64_t r, int64_t c0, int64_t, float total) {
        if (c0 != 0) return;
        float v = total;
        if constexpr (O == Op::mean) v = total / static_cast<float>(cols);
        if constexpr (O == Op::norm2) v = std::sqrt(total);
        *y->row<T>(r) = Fmt::from_float(v);
      });
  return Status::ok();
}

template <Op O>
bool register_reduce(const char* op) {
  return register_kernel(op, {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
    return with_format(call.problem.dtype, [&](auto fmt) { return run_reduce<decltype(fmt), O>(call); });
  });
}

DNNB_REGISTER(register_reduce<Op::sum>("sum"));
DNNB_REGISTER(register_reduce<Op::mean>("mean"));
DNNB_REGISTER(register_reduce<Op::max>("max"));
DNNB_REGISTER(register_reduce<Op::norm2>("norm2"));

}  // namespace
}  // namespace dnnb::avx512
