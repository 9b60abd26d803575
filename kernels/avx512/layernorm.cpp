// layernorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b, biased variance.
// Statistics in one pass over memory: each 4096-column block gets an exact two-pass mean and
// sum of squared deviations while it sits in L1, and blocks (and column chunks) merge with
// Chan's update (layernorm_rows.h), so there is no sum/sum-of-squares cancellation for rows with
// a large mean. A second pass writes y, prefetching the thread's next row into L2 as it
// goes (NextRow, write_prefetching: avx512_common.h), so that DRAM reads go on meanwhile.
#include "kernels/avx512/layernorm_rows.h"

namespace dnnb::avx512 {
namespace {

template <class Fmt>
DNNB_AVX512 void layernorm_write(const typename Fmt::storage* x, const typename Fmt::storage* w,
                                 const typename Fmt::storage* b, int64_t n, float mean, float rstd,
                                 typename Fmt::storage* y, bool stream) {
  const __m512 vmean = _mm512_set1_ps(mean), vrstd = _mm512_set1_ps(rstd);
  write_span_values<Fmt>(y, n, stream, [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    if (m == 0xffff) {
      const __m512 normalised = _mm512_mul_ps(_mm512_sub_ps(Fmt::load(x + i), vmean), vrstd);
      return _mm512_fmadd_ps(normalised, Fmt::load(w + i), Fmt::load(b + i));
    }
    const __m512 normalised = _mm512_mul_ps(_mm512_sub_ps(Fmt::load(x + i, m), vmean), vrstd);
    return _mm512_fmadd_ps(normalised, Fmt::load(w + i, m), Fmt::load(b + i, m));
  });
}

template <class Fmt>
Status run_layernorm(OpCall& call) {
  using T = typename Fmt::storage;
  auto epsilon = norm_epsilon(call, 1e-5);
  if (!epsilon) return epsilon.status();
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto y = host_rows(call.outputs.at(0));
  if (!y) return y.status();
  std::vector<T> w_copy, b_copy;
  auto w = contiguous_vector<T>(call.inputs.at(1), w_copy);
  if (!w) return w.status();
  auto b = contiguous_vector<T>(call.inputs.at(2), b_copy);
  if (!b) return b.status();
  const int64_t cols = x->cols();
  const bool stream = stream_rows(*y, tensor_bytes(call.inputs.at(0)));
  for_each_layernorm_row<Fmt>(*x, *epsilon, [&](int64_t r, int64_t c0, int64_t n, float mean, float rstd) {
    T* dst = write_span<T>(*y, r, c0, n, 2);
    const T* src = read_span<T>(*x, r, c0, n, 0);
    // Whole rows (n == cols): the next row is prefetched piece by piece while this one is written.
    write_prefetching(n, n == cols ? next_row_of(*x, r) : NextRow{}, [&](int64_t c, int64_t k) {
      layernorm_write<Fmt>(src + c, *w + c0 + c, *b + c0 + c, k, mean, rstd, dst + c, stream);
    });
    commit_span(*y, r, c0, n, dst);
  });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("layernorm", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_layernorm<decltype(fmt)>(call); });
}));

}  // namespace
}  // namespace dnnb::avx512
