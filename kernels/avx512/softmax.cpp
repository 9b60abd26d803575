// softmax over the last dim: t = softcap > 0 ? c tanh(x/c) : x; z = scale t + mask;
// y = e^(z - max z) / sum. Whole rows per thread: z and its max, then e^(z - max) and its
// sum kept in an f32 scratch row (in cache), then y = e / sum: one exponential per element
// (without a mask or softcap, e^z and its sum in one pass where safe: exp_row_unshifted);
// the next row is prefetched into L2 during the exponential pass (NextRow).
// Rows cut into column chunks (fewer rows than threads): online statistics per chunk
// (softmax_row.h), merged in column order, then y written with the row's max and 1/sum. A
// row whose z are all -inf gives y = 0 (as SDPA does). The mask is broadcast to x's shape
// (stride-0 rows/cols gathered per span).
#include "kernels/avx512/softmax_row.h"

namespace dnnb::avx512 {
namespace {

struct SoftmaxParams {
  float scale = 1;
  float softcap = 0;      // 0 = off
  float inv_softcap = 0;
};

// z for 16 columns of x (and mask, when given); lanes outside m are -inf.
template <class Fmt>
struct SoftmaxLogits {
  const typename Fmt::storage* x;
  const typename Fmt::storage* mask;  // null: no mask
  SoftmaxParams p;
  // Masked rows hold -inf, which would send every row through exp_row_unshifted and back.
  static constexpr bool kTryUnshifted = false;
  // z from 16 values of x and of the mask (ignored when there is none), lane for lane.
  DNNB_AVX512_INLINE __m512 z_of(__m512 t, __m512 mask_value) const {
    if (p.softcap > 0)
      t = _mm512_mul_ps(_mm512_set1_ps(p.softcap), tanh_ps(_mm512_mul_ps(t, _mm512_set1_ps(p.inv_softcap))));
    const __m512 z = _mm512_mul_ps(t, _mm512_set1_ps(p.scale));
    return mask != nullptr ? _mm512_add_ps(z, mask_value) : z;
  }
  DNNB_AVX512_INLINE __m512 operator()(int64_t i, __mmask16 m) const {
    const __m512 t = m == 0xffff ? Fmt::load(x + i) : Fmt::load(x + i, m);
    const __m512 mv = mask == nullptr ? t : m == 0xffff ? Fmt::load(mask + i) : Fmt::load(mask + i, m);
    return _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), m, z_of(t, mv));
  }
  // 32 columns in the format's cheapest lane order (exp_row's max pass): x and mask are read
  // in the same order, so each lane still pairs an element with its mask value.
  DNNB_AVX512_INLINE Vecs<2> any_order2(int64_t i) const {
    const Vecs<2> t = Fmt::load2_any_order(x + i);
    const Vecs<2> mv = mask == nullptr ? t : Fmt::load2_any_order(mask + i);
    return {{z_of(t.v[0], mv.v[0]), z_of(t.v[1], mv.v[1])}};
  }
};

// Whether the first pass of softmax_row stores z for the second (exp_row's keep_z): only
// where z costs more to recompute than to reload (softcap's tanh).
template <class Fmt>
bool keeps_z(const SoftmaxLogits<Fmt>& logits) { return logits.p.softcap > 0; }
template <class Fmt, bool kScaled>
bool keeps_z(const PlainLogits<Fmt, kScaled>&) { return false; }

// Logits is SoftmaxLogits<Fmt>, or PlainLogits<Fmt, kScaled> when there is neither mask nor
// softcap (run_softmax).
template <class Fmt, class Logits>
DNNB_AVX512 OnlineSoftmax softmax_stats(const Logits& logits, int64_t n) {
  return online_softmax_span(n, logits);
}

template <class Fmt, class Logits>
DNNB_AVX512 void softmax_write(const Logits& logits, int64_t n, const OnlineSoftmax& row,
                               typename Fmt::storage* y, bool stream) {
  // All -inf: sum is 0, and y = e^(-inf - 0) * 0 = 0.
  const bool empty = row.sum == 0;
  const __m512 shift = _mm512_set1_ps(empty ? 0.0f : row.max);
  const __m512 inv_sum = _mm512_set1_ps(empty ? 0.0f : 1.0f / row.sum);
  write_span_values<Fmt>(y, n, stream, [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    return _mm512_mul_ps(exp_ps(_mm512_sub_ps(logits(i, m), shift)), inv_sum);
  });
}

// A whole row with one exponential per element (exp_row, softmax_row.h), then y = e / sum.
// NaN logits make the sum NaN and so the row NaN; an all -inf row gives 0.
// 16-bit outputs take the half-tier exponential (avx512_math.h; 3 uops fewer per 16
// columns): each e, and so the sum, is within 3.1e-6 relative (docs/avx512.md), so y = e/sum
// is within ~7e-6 of the full tier's before its rounding to f16/bf16. The tolerance is 2 eps
// of the dtype (conformance.md, normalization), of which the final rounding takes half an
// eps: 7e-6 is 280x below the other 1.5 eps of f16 (2.9e-3) and 2200x below bf16's; a result
// can round differently from the full tier's only within 7e-6 of a rounding boundary, and
// then by one ulp, inside that same tolerance.
template <class Fmt, class Logits>
DNNB_AVX512 void softmax_row(const Logits& logits, int64_t n, float* z, typename Fmt::storage* y, bool stream,
                             const NextRow& next) {
  const OnlineSoftmax row = exp_row<accuracy_for<Fmt>>(n, logits, z, keeps_z(logits), next);
  const __m512 inv_sum = _mm512_set1_ps(row.sum == 0 ? 0.0f : 1.0f / row.sum);
  write_span_values<Fmt>(y, n, stream, [&](int64_t j, __mmask16 m) DNNB_AVX512_LAMBDA {
    const __m512 e = m == 0xffff ? _mm512_loadu_ps(z + j) : _mm512_maskz_loadu_ps(m, z + j);
    return _mm512_mul_ps(e, inv_sum);
  });
}

// Every row of x into y; logits_at(r, c0, n) gives the logits of columns [c0, c0 + n) of
// row r (scratch slots 0 and 1 for gathered x and mask; 2 y, 3 the f32 row of softmax_row).
template <class Fmt, class LogitsAt>
Status softmax_rows(const HostRows& x, const HostRows& y, const HostRows* mask, bool stream,
                    const LogitsAt& logits_at) {
  using T = typename Fmt::storage;
  if (plan_row_chunks(x.rows(), x.cols()).chunks == 1) {
    // Whole rows per task: the three-pass row above (one exponential per element).
    const int64_t cols = x.cols();
    parallel_tasks(x.rows(), x.rows() * std::max<int64_t>(cols, 1), [&](int64_t r) {
      T* dst = write_span<T>(y, r, 0, cols, 2);
      softmax_row<Fmt>(logits_at(r, 0, cols), cols, scratch<float>(3, cols), dst, stream, next_row_of(x, r, mask));
      commit_span(y, r, 0, cols, dst);
    });
    return Status::ok();
  }
  // Rows cut into column chunks: online statistics per chunk, merged, then a write pass.
  for_each_row<OnlineSoftmax>(
      x.rows(), x.cols(), [&](int64_t r, int64_t c0, int64_t n) { return softmax_stats<Fmt>(logits_at(r, c0, n), n); },
      merge_online,
      [&](int64_t r, int64_t c0, int64_t n, const OnlineSoftmax& row) {
        T* dst = write_span<T>(y, r, c0, n, 2);
        softmax_write<Fmt>(logits_at(r, c0, n), n, row, dst, stream);
        commit_span(y, r, c0, n, dst);
      });
  return Status::ok();
}

template <class Fmt>
Status run_softmax(OpCall& call) {
  using T = typename Fmt::storage;
  const Tensor& x_tensor = call.inputs.at(0);
  SoftmaxParams p;
  auto scale = call.problem.get_double("scale", 1.0);
  if (!scale) return scale.status();
  auto softcap = call.problem.get_double("softcap", 0.0);
  if (!softcap) return softcap.status();
  p.scale = static_cast<float>(*scale);
  p.softcap = static_cast<float>(*softcap);
  p.inv_softcap = p.softcap > 0 ? 1.0f / p.softcap : 0.0f;
  auto x = host_rows(x_tensor);
  if (!x) return x.status();
  auto y = host_rows(call.outputs.at(0));
  if (!y) return y.status();
  const bool has_mask = call.inputs.size() >= 2;
  HostRows mask;
  if (has_mask) {
    auto mrows = host_rows_broadcast(call.inputs[1], x_tensor.shape);
    if (!mrows) return mrows.status();
    mask = *mrows;
  }
  const bool stream = stream_rows(*y, tensor_bytes(x_tensor) + (has_mask ? tensor_bytes(call.inputs[1]) : 0));
  // Neither mask nor softcap: PlainLogits, compiled without SoftmaxLogits' per-vector tests
  // of the options (a VCOMISS on port 0 and two branches per 16 columns in each of the first
  // two passes: GCC does not take them out of the loops) and, for scale 1, without the
  // multiply (1 uop per 16 columns in each). The same z, so the same results.
  if (!has_mask && !(p.softcap > 0)) {
    auto plain = [&]<bool kScaled>() {
      return softmax_rows<Fmt>(*x, *y, nullptr, stream, [&](int64_t r, int64_t c0, int64_t n) {
        return PlainLogits<Fmt, kScaled>{read_span<T>(*x, r, c0, n, 0), p.scale};
      });
    };
    return p.scale == 1.0f ? plain.template operator()<false>() : plain.template operator()<true>();
  }
  return softmax_rows<Fmt>(*x, *y, has_mask ? &mask : nullptr, stream, [&](int64_t r, int64_t c0, int64_t n) {
    return SoftmaxLogits<Fmt>{read_span<T>(*x, r, c0, n, 0), has_mask ? read_span<T>(mask, r, c0, n, 1) : nullptr, p};
  });
}

DNNB_REGISTER(register_kernel("softmax", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_softmax<decltype(fmt)>(call); });
}));

}  // namespace
}  // namespace dnnb::avx512
