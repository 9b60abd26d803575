// dot: y[r] = sum over the last dim of a[r] * b[r], for every row r of a batch ([..., K]).
// Four zmm accumulators (64 products per step, FMA in f32) are folded into a running total
// every 4096 elements, so no one f32 chain grows long; y is rounded once to its dtype
// (f32 with y.dt=f32). Rows go to threads; a single long row is cut into column chunks whose
// partial sums are added in column order (for_each_row), so results do not depend on timing.
// Strided rows (a.layout=padded has unit-stride rows; other views) are gathered into scratch.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/gemm.h"

namespace dnnb::avx512 {
namespace {

constexpr int64_t kBlock = 4096;

template <class Fmt>
DNNB_AVX512 float dot_span(const typename Fmt::storage* a, const typename Fmt::storage* b, int64_t n) {
  __m512 total = _mm512_setzero_ps();
  for (int64_t s = 0; s < n; s += kBlock) {
    const int64_t end = std::min(n, s + kBlock);
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    int64_t i = s;
    for (; i + 64 <= end; i += 64) {
      // Both operands in the format's cheapest lane order: lanes pair the same elements.
      const Vecs<2> a01 = Fmt::load2_any_order(a + i), a23 = Fmt::load2_any_order(a + i + 32);
      const Vecs<2> b01 = Fmt::load2_any_order(b + i), b23 = Fmt::load2_any_order(b + i + 32);
      c0 = _mm512_fmadd_ps(a01.v[0], b01.v[0], c0);
      c1 = _mm512_fmadd_ps(a01.v[1], b01.v[1], c1);
      c2 = _mm512_fmadd_ps(a23.v[0], b23.v[0], c2);
      c3 = _mm512_fmadd_ps(a23.v[1], b23.v[1], c3);
    }
    for (; i < end; i += 16) {
      const __mmask16 m = tail_mask(std::min<int64_t>(16, end - i));
      c0 = _mm512_fmadd_ps(Fmt::load(a + i, m), Fmt::load(b + i, m), c0);  // masked lanes add 0 * 0
    }
    total = _mm512_add_ps(total, _mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)));
  }
  return _mm512_reduce_add_ps(total);
}

template <class Fmt>
Status run_dot(OpCall& call) {
  using T = typename Fmt::storage;
  auto a = host_rows(call.inputs.at(0));
  if (!a) return a.status();
  auto b = host_rows(call.inputs.at(1));
  if (!b) return b.status();
  auto y = host_elements(call.outputs.at(0));
  if (!y) return y.status();
  const DType y_dtype = call.outputs.at(0).dtype;
  const HostRows& out = *y;
  for_each_row<float>(
      a->rows(), a->cols(),
      [&](int64_t r, int64_t c0, int64_t n) {
        return dot_span<Fmt>(read_span<T>(*a, r, c0, n, 0), read_span<T>(*b, r, c0, n, 1), n);
      },
      [](float x, float z) { return x + z; },
      [&](int64_t r, int64_t c0, int64_t, float sum) {  // once per chunk: the first writes
        if (c0 == 0) store_rounded(out.data, y_dtype, out.index.row_offset(r), sum);
      });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("dot", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_dot<decltype(fmt)>(call); });
}));

}  // namespace
}  // namespace dnnb::avx512
