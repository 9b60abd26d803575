// rmsnorm over the last dim: y = x / sqrt(mean(x^2) + eps) * w (form=torch, default) or
// * (1 + w) (form=gemma). One pass for the f32 sum of squares (row_reduce.h; no
// cancellation: all terms are positive), one pass to write y, which prefetches the thread's
// next row into L2 as it goes (NextRow, write_prefetching: avx512_common.h). Computed in
// f32 throughout and rounded once, as the spec asks (Llama's module rounds before the
// weight multiply).
#include "kernels/avx512/row_reduce.h"

namespace dnnb::avx512 {
namespace {

template <class Fmt>
DNNB_AVX512 void rmsnorm_write(const typename Fmt::storage* x, const typename Fmt::storage* w, int64_t n,
                               float rstd, float weight_offset, typename Fmt::storage* y, bool stream) {
  const __m512 vrstd = _mm512_set1_ps(rstd), offset = _mm512_set1_ps(weight_offset);
  write_span_values<Fmt>(y, n, stream, [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    if (m == 0xffff) {
      const __m512 scale = _mm512_add_ps(Fmt::load(w + i), offset);
      return _mm512_mul_ps(_mm512_mul_ps(Fmt::load(x + i), vrstd), scale);
    }
    const __m512 scale = _mm512_add_ps(Fmt::load(w + i, m), offset);
    return _mm512_mul_ps(_mm512_mul_ps(Fmt::load(x + i, m), vrstd), scale);
  });
}

template <class Fmt>
Status run_rmsnorm(OpCall& call) {
  using T = typename Fmt::storage;
  auto eps = call.problem.get_double("eps", 1e-6);
  if (!eps) return eps.status();
  const float epsilon = static_cast<float>(*eps);
  const std::string form = call.problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input("rmsnorm: form=" + form + " is not torch or gemma");
  const float weight_offset = form == "gemma" ? 1.0f : 0.0f;
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto y = host_rows(call.outputs.at(0));
  if (!y) return y.status();
  std::vector<T> w_copy;
  auto w = contiguous_vector<T>(call.inputs.at(1), w_copy);
  if (!w) return w.status();
  const int64_t cols = x->cols();
  const bool stream = stream_rows(*y, tensor_bytes(call.inputs.at(0)));
  for_each_row<float>(
      x->rows(), cols,
      [&](int64_t r, int64_t c0, int64_t n) {
        return reduce_span<Fmt, Reduce::sum_squares>(read_span<T>(*x, r, c0, n, 0), n);
      },
      [](float a, float b) { return a + b; },
      [&](int64_t r, int64_t c0, int64_t n, float sum_squares) {
        const float rstd = 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + epsilon);
        T* dst = write_span<T>(*y, r, c0, n, 2);
        const T* src = read_span<T>(*x, r, c0, n, 0);
        // Whole rows (n == cols): the next row is prefetched piece by piece while this one is written.
        write_prefetching(n, n == cols ? next_row_of(*x, r) : NextRow{}, [&](int64_t c, int64_t k) {
          rmsnorm_write<Fmt>(src + c, *w + c0 + c, k, rstd, weight_offset, dst + c, stream);
        });
        commit_span(*y, r, c0, n, dst);
      });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("rmsnorm", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_rmsnorm<decltype(fmt)>(call); });
}));

}  // namespace
}  // namespace dnnb::avx512
