// cross_entropy_bwd: dlogits = (softmax(row) - onehot(target)) / kept for kept rows, 0 for
// ignored rows (the gradient of the mean loss with grad 1). Whole rows per thread: the row's
// max, then e^(x - max) and its sum kept in an f32 scratch row (e^x and its sum in one pass
// where safe: exp_row_unshifted), then one write pass in which the target column gets p - 1
// (the next row prefetched into L2 meanwhile: NextRow). Rows cut into column chunks: online
// statistics, merged, then a write pass recomputing e^(x - max).
#include "kernels/avx512/cross_entropy_rows.h"

namespace dnnb::avx512 {
namespace {

// Columns [c0, c0 + n) of a kept row; `target` is relative to c0 (outside [0, n): not here).
template <class Fmt>
DNNB_AVX512 void gradient_write(const typename Fmt::storage* x, int64_t n, int64_t target,
                                const OnlineSoftmax& row, float inv_kept, typename Fmt::storage* dx,
                                bool stream) {
  const __m512 shift = _mm512_set1_ps(row.max);
  const __m512 inv_sum = _mm512_set1_ps(1.0f / row.sum), scale = _mm512_set1_ps(inv_kept);
  const __m512 one = _mm512_set1_ps(1.0f);
  write_span_values<Fmt>(dx, n, stream, [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    const __m512 v = m == 0xffff ? Fmt::load(x + i) : Fmt::load(x + i, m);
    __m512 p = _mm512_mul_ps(exp_ps(_mm512_sub_ps(v, shift)), inv_sum);
    // The target column gets p - 1, computed in its lane with the same rounding as p.
    const uint64_t lane = static_cast<uint64_t>(target - i);
    if (lane < 16) p = _mm512_mask_sub_ps(p, static_cast<__mmask16>(1u << lane), p, one);
    return _mm512_mul_ps(p, scale);
  });
}

// An ignored row's columns: zeros, through the same (streaming) store path as kept rows.
template <class Fmt>
DNNB_AVX512 void zero_write(int64_t n, typename Fmt::storage* dx, bool stream) {
  write_span_values<Fmt>(dx, n, stream, [&](int64_t, __mmask16) DNNB_AVX512_LAMBDA { return _mm512_setzero_ps(); });
}

// A whole kept row: e = e^(x - max) once per element into the f32 scratch row z (exp_row),
// then dx = (e / sum - onehot) / kept.
// bf16 takes the half-tier exponential (3 uops fewer per 16 columns): e and the sum are
// within 3.1e-6 relative of the full tier's (docs/avx512.md), so dx is within ~7e-6 before
// its rounding, against a tolerance of 2 eps (1.6e-2; conformance.md, loss) of which the
// rounding takes half an eps (the same argument as softmax_row in softmax.cpp).
// Columns other than the target's are written as e (1/sum 1/kept), one multiply by a
// constant rounded once per row instead of two roundings per element (1 uop fewer per 16
// columns; the result moves by at most ~1 ulp of f32, against 64 eps for f32 and 2 bf16
// eps). The target's vector keeps (e/sum - 1)/kept: p - 1 cancels, so p is rounded first.
template <class Fmt>
DNNB_AVX512 void gradient_row(const typename Fmt::storage* x, int64_t n, int64_t target, float inv_kept,
                              float* z, typename Fmt::storage* dx, bool stream, const NextRow& next) {
  const OnlineSoftmax row = exp_row<accuracy_for<Fmt>>(n, PlainLogits<Fmt>{x}, z, false, next);
  const __m512 inv_sum = _mm512_set1_ps(1.0f / row.sum), scale = _mm512_set1_ps(inv_kept);
  const __m512 inv_sum_kept = _mm512_set1_ps((1.0f / row.sum) * inv_kept);
  const __m512 one = _mm512_set1_ps(1.0f);
  write_span_values<Fmt>(dx, n, stream, [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    const __m512 e = m == 0xffff ? _mm512_loadu_ps(z + i) : _mm512_maskz_loadu_ps(m, z + i);
    const uint64_t lane = static_cast<uint64_t>(target - i);
    if (__builtin_expect(lane >= 16, 1)) return _mm512_mul_ps(e, inv_sum_kept);
    const __m512 p = _mm512_mul_ps(e, inv_sum);
    return _mm512_mul_ps(_mm512_mask_sub_ps(p, static_cast<__mmask16>(1u << lane), p, one), scale);
  });
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
  const bool stream = stream_rows(*dx, tensor_bytes(call.inputs.at(0)));
  const int64_t cols = x->cols();
  if (plan_row_chunks(rows, cols).chunks == 1) {
    // Whole rows per task: one exponential per element (gradient_row).
    parallel_tasks(rows, rows * std::max<int64_t>(cols, 1), [&](int64_t r) {
      T* dst = write_span<T>(*dx, r, 0, cols, 2);
      if (targets->ignored(r)) {
        zero_write<Fmt>(cols, dst, stream);
      } else {
        gradient_row<Fmt>(read_span<T>(*x, r, 0, cols, 0), cols, targets->target[r], inv_kept,
                          scratch<float>(3, cols), dst, stream, next_row_of(*x, r));
      }
      commit_span(*dx, r, 0, cols, dst);
    });
    return Status::ok();
  }
  // Rows cut into column chunks: online statistics per chunk, merged, then a write pass.
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
          zero_write<Fmt>(n, dst, stream);
        } else {
          gradient_write<Fmt>(read_span<T>(*x, r, c0, n, 0), n, targets->target[r] - c0, row, inv_kept, dst, stream);
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
