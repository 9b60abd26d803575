// cross_entropy_bwd: dlogits = (softmax(row) - onehot(target)) / kept for kept rows, 0 for
// ignored rows (the gradient of the mean loss with grad 1). Per row: online statistics,
// then one write pass; the target column is rewritten with p - 1 afterwards.
#include "kernels/avx512/cross_entropy_rows.h"

namespace dnnb::avx512 {
namespace {

// Columns [c0, c0 + n) of a kept row; `target` is relative to c0 (outside [0, n): not here).
template <class Fmt>
DNNB_AVX512 void gradient_write(const typename Fmt::storage* x, int64_t n, int64_t target,
                                const OnlineSoftmax& row, float inv_kept, typename Fmt::storage* dx) {
  const __m512 shift = _mm512_set1_ps(row.max);
  const __m512 inv_sum = _mm512_set1_ps(1.0f / row.sum), scale = _mm512_set1_ps(inv_kept);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 p = _mm512_mul_ps(exp_ps(_mm512_sub_ps(Fmt::load(x + i), shift)), inv_sum);
    Fmt::store(dx + i, _mm512_mul_ps(p, scale));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 p = _mm512_mul_ps(exp_ps(_mm512_sub_ps(Fmt::load(x + i, m), shift)), inv_sum);
    Fmt::store(dx + i, _mm512_mul_ps(p, scale), m);
  }
  if (target >= 0 && target < n) {
    // The same vector arithmetic on one lane, so p matches the other columns' rounding.
    const __m512 v = _mm512_set1_ps(Fmt::to_float(x[target]));
    const __m512 p = _mm512_mul_ps(exp_ps(_mm512_sub_ps(v, shift)), inv_sum);
    const float g = (_mm512_cvtss_f32(p) - 1.0f) * inv_kept;
    dx[target] = Fmt::from_float(g);
  }
}

template <class Fmt>
Status run_cross_entropy_bwd(OpCall& call) {
  using T = typename Fmt::storage;
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto dx = host_rows(call.outputs.at(0));
  if (!dx) return dx.status();
  const int64_t rows = x->rows();
  auto targets = read_targets(call, rows, x->cols());
  if (!targets) return targets.status();
  const float inv_kept = targets->kept == 0 ? 0.0f : 1.0f / static_cast<float>(targets->kept);
  for_each_row<OnlineSoftmax>(
      rows, x->cols(),
      [&](int64_t r, int64_t c0, int64_t n) {
        if (targets->ignored(r)) return OnlineSoftmax{};
        return logits_stats<Fmt>(read_span<T>(*x, r, c0, n, 0), n);
      },
      merge_online,
      [&](int64_t r, int64_t c0, int64_t n, const OnlineSoftmax& row) {
        T* dst = write_span<T>(*dx, r, c0, n, 2);
        if (targets->ignored(r)) {
          std::fill(dst, dst + n, T{});
        } else {
          gradient_write<Fmt>(read_span<T>(*x, r, c0, n, 0), n, targets->target[r] - c0, row, inv_kept, dst);
        }
        commit_span(*dx, r, c0, n, dst);
      });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("cross_entropy_bwd", {DType::f32, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_cross_entropy_bwd<decltype(fmt)>(call); });
}));

}  // namespace
}  // namespace dnnb::avx512
