// Online softmax statistics of one row, shared by softmax and the cross-entropy pair:
// one pass keeps, per lane, the running max m and the sum s of e^(z - m), rescaling s when
// m grows; lanes, column chunks and rows then merge the same way. -inf logits (masks) are
// handled without NaN: while a max is still -inf the shift is taken as 0, so e^(-inf) = 0.
#pragma once
#include <cmath>
#include <limits>

#include "kernels/avx512/avx512_math.h"

namespace dnnb::avx512 {

struct OnlineSoftmax {
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0;  // of e^(z - max); NaN once any z was NaN
};

inline OnlineSoftmax merge_online(const OnlineSoftmax& a, const OnlineSoftmax& b) {
  OnlineSoftmax out;
  out.max = std::max(a.max, b.max);
  if (std::isnan(a.max) || std::isnan(b.max)) out.max = NAN;
  auto term = [&](const OnlineSoftmax& o) { return o.sum == 0 ? 0.0f : o.sum * std::exp(o.max - out.max); };
  out.sum = term(a) + term(b);
  return out;
}

// The shift to subtract from z: the max, or 0 while the max is -inf (all logits masked).
DNNB_AVX512_INLINE __m512 safe_shift(__m512 m) {
  const __mmask16 empty = _mm512_cmp_ps_mask(m, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), _CMP_EQ_OQ);
  return _mm512_mask_mov_ps(m, empty, _mm512_setzero_ps());
}

// Statistics of z over n columns; `z_of(i, mask)` returns 16 logits from column i with the
// lanes outside `mask` already -inf.
template <class ZOf>
DNNB_AVX512_INLINE OnlineSoftmax online_softmax_span(int64_t n, const ZOf& z_of) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 s = _mm512_setzero_ps();
  int64_t i = 0;
  // 64 columns per step: one rescaling exponential per four vectors of logits.
  for (; i + 64 <= n; i += 64) {
    const __m512 z0 = z_of(i, 0xffff), z1 = z_of(i + 16, 0xffff);
    const __m512 z2 = z_of(i + 32, 0xffff), z3 = z_of(i + 48, 0xffff);
    // A NaN z gives a NaN exponential below, which poisons s (and so the whole row).
    const __m512 m_new = _mm512_max_ps(m, _mm512_max_ps(_mm512_max_ps(z0, z1), _mm512_max_ps(z2, z3)));
    const __m512 shift = safe_shift(m_new);
    const __m512 e01 = _mm512_add_ps(exp_ps(_mm512_sub_ps(z0, shift)), exp_ps(_mm512_sub_ps(z1, shift)));
    const __m512 e23 = _mm512_add_ps(exp_ps(_mm512_sub_ps(z2, shift)), exp_ps(_mm512_sub_ps(z3, shift)));
    s = _mm512_fmadd_ps(s, exp_ps(_mm512_sub_ps(m, shift)), _mm512_add_ps(e01, e23));
    m = m_new;
  }
  for (; i < n; i += 16) {
    const __m512 z = z_of(i, tail_mask(std::min<int64_t>(16, n - i)));
    const __m512 m_new = _mm512_max_ps(m, z);
    const __m512 shift = safe_shift(m_new);
    s = _mm512_fmadd_ps(s, exp_ps(_mm512_sub_ps(m, shift)), exp_ps(_mm512_sub_ps(z, shift)));
    m = m_new;
  }
  alignas(64) float lane_max[16], lane_sum[16];
  _mm512_store_ps(lane_max, m);
  _mm512_store_ps(lane_sum, s);
  OnlineSoftmax total;
  for (int l = 0; l < 16; ++l) total = merge_online(total, {lane_max[l], lane_sum[l]});
  return total;
}

// The exponential pass of a row, shared by exp_row (shifted by the max) and exp_row_unshifted:
// 64 columns per step, z32(j) giving 32 arguments at a time and `exp` taking four vectors at
// once (four dependency chains), `next` prefetched, e stored to z[] when z is given and summed
// in four accumulators; then the tail 16 columns at a time through z_tail(i, mask), lanes
// outside the mask neither stored nor added. Returns the sum.
template <class Z32, class ZTail, class Exp>
DNNB_AVX512_INLINE float exp_sum_pass(int64_t n, const Z32& z32, const ZTail& z_tail, const Exp& exp, float* z,
                                      const NextRow& next) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const Vecs<2> z01 = z32(i), z23 = z32(i + 32);
    const Vecs<4> e = exp(Vecs<4>{{z01.v[0], z01.v[1], z23.v[0], z23.v[1]}});
    next.fetch(i, 64);
    if (z != nullptr) {
      _mm512_storeu_ps(z + i, e.v[0]);
      _mm512_storeu_ps(z + i + 16, e.v[1]);
      _mm512_storeu_ps(z + i + 32, e.v[2]);
      _mm512_storeu_ps(z + i + 48, e.v[3]);
    }
    s0 = _mm512_add_ps(s0, e.v[0]);
    s1 = _mm512_add_ps(s1, e.v[1]);
    s2 = _mm512_add_ps(s2, e.v[2]);
    s3 = _mm512_add_ps(s3, e.v[3]);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(std::min<int64_t>(16, n - i));
    const __m512 e = exp(Vecs<1>{{z_tail(i, m)}}).v[0];
    if (z != nullptr) _mm512_mask_storeu_ps(z + i, m, e);
    s0 = _mm512_mask_add_ps(s0, m, s0, e);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

// Softmax does not depend on a shift of the logits; the max is subtracted only so that e^z
// can neither overflow nor lose its precision to underflow. For most rows z is in a range
// where neither happens, so the row is tried first with no shift at all: e = e^z and its sum
// in one pass, without the max pass before it (~2 uops per 16 columns and one more read of
// the row from L1/L2) or the subtraction in it, and without the clamp (see below). The result
// is kept when 1 <= sum <= 2^64 and taken as {max 0, sum}; otherwise (a NaN or an infinite
// logit, logits past ~44, rows whose every e^z is below ~1/n) the row is redone shifted by its
// max, so every edge gives what the shifted form gives.
// Why those bounds suffice:
// - sum >= 1: an e that falls into the f32 subnormals is off by at most half their spacing,
//   2^-150 absolute, so e / sum is off by at most 2^-150 (shifted by the max, torch's own e
//   has that same absolute error, divided by its sum, which is >= 1 too). So y loses nothing
//   but what the subnormal range of f32 and bf16 cannot hold anyway.
// - sum <= 2^64: 1/sum (and 1/sum x 1/kept in cross_entropy_bwd, kept < 2^31) stays a normal
//   f32, so y = e x (1/sum) is rounded as in the shifted form.
// - No clamp: z past +-2^22 log2 e leaves exp_clamped's rounding shifter, but then gives
//   only exact 0 (z << 0: 2^n underflows whatever r is) or +inf (z > 88.7, or r so large that
//   the polynomial overflows), and +inf fails the bound. z = -inf gives NaN (r = -inf + inf),
//   which fails it too: masked rows take the shifted path.
// - The exponential's error is relative and does not grow with z except through the
//   reduction: |n| <= 64 below the upper bound, where half's one-constant ln 2 moves r by
//   <= 1.3e-7 (avx512_math.h), 20x below its polynomial's error.
// Returns false when the row must be redone.
inline constexpr float kMinUnshiftedSum = 1.0f;
inline constexpr float kMaxUnshiftedSum = 0x1p64f;
template <Accuracy A, class ZOf, class Z2>
DNNB_AVX512_INLINE bool exp_row_unshifted(int64_t n, const ZOf& z_of, const Z2& z2, float* z, const NextRow& next,
                                          OnlineSoftmax& out) {
  const float sum = exp_sum_pass(
      n, [&](int64_t j) DNNB_AVX512_LAMBDA { return z2(j, z == nullptr); }, z_of,
      [](const auto& v) DNNB_AVX512_LAMBDA { return exp_clamped<A>(v); }, z, next);
  if (!(sum >= kMinUnshiftedSum && sum <= kMaxUnshiftedSum)) return false;  // NaN fails too
  out = {0.0f, sum};
  return true;
}

// A whole row's statistics with one exponential per element, for rows that fit in cache:
// the max of z = z_of(...); then e = e^(z - max) (shift 0 when the max is -inf) into the f32
// array z[0, n), and its sum. Returns {max, sum}; a NaN logit makes the sum NaN (e^(NaN -
// max) or a NaN max). keep_z: z_of is costly (softcap's tanh), so the first pass stores z
// in z[] for the second; otherwise the second pass calls z_of again (the row is in cache),
// which costs less than a store and reload of the f32 row. z == nullptr: only the sum is
// wanted (logsumexp), e is not stored. `next` is prefetched during the exponential pass,
// the one that has compute to hide it behind (avx512_common.h).
// A: the accuracy of the exponentials (avx512_math.h): accuracy_for<Fmt> of the dtype the
// result is rounded to (half for 16-bit softmax and cross-entropy, full for f32); each caller
// says why its tolerance allows it.
// Four vectors per step go through one interleaved exp_v<A, 4> (four dependency chains).
// ZOf::kTryUnshifted: try the row without the shift first (exp_row_unshifted; then the
// result is {0, sum of e^z}), and only when that fails take the two passes above.
template <Accuracy A = Accuracy::full, class ZOf>
DNNB_AVX512_INLINE OnlineSoftmax exp_row(int64_t n, const ZOf& z_of, float* z, bool keep_z, const NextRow& next) {
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m0 = neg_inf, m1 = neg_inf;
  int64_t i = 0;
  // A ZOf that can load 32 logits in its format's cheapest lane order (any_order2: bf16 even
  // and odd elements by a shift and an AND, 1 uop per 16 where the in-order widening takes 2)
  // does so wherever the order does not matter: in the max pass unless z is kept for the
  // second pass (the max of a set does not depend on the order; with a NaN in the row the
  // max may differ, but the sum, and so every output, is NaN either way), and in both passes
  // when only the sum is wanted (z == nullptr).
  constexpr bool kAnyOrder = requires(const ZOf& f) { f.any_order2(int64_t{0}); };
  auto z2 = [&](int64_t j, bool any_order) DNNB_AVX512_LAMBDA {
    if constexpr (kAnyOrder) {
      if (any_order) return z_of.any_order2(j);
    }
    return Vecs<2>{{z_of(j, 0xffff), z_of(j + 16, 0xffff)}};
  };
  // Plain logits (no mask, no softcap) are tried without the shift first (exp_row_unshifted).
  if constexpr (ZOf::kTryUnshifted) {
    OnlineSoftmax out;
    if (exp_row_unshifted<A>(n, z_of, z2, z, next, out)) return out;
  }
  for (; i + 32 <= n; i += 32) {
    const Vecs<2> zz = z2(i, !keep_z);
    const __m512 z0 = zz.v[0], z1 = zz.v[1];
    if (keep_z) {
      _mm512_storeu_ps(z + i, z0);
      _mm512_storeu_ps(z + i + 16, z1);
    }
    m0 = _mm512_max_ps(m0, z0);
    m1 = _mm512_max_ps(m1, z1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(std::min<int64_t>(16, n - i));
    const __m512 v = z_of(i, m);  // -inf outside m
    if (keep_z) _mm512_mask_storeu_ps(z + i, m, v);
    m0 = _mm512_max_ps(m0, v);
  }
  OnlineSoftmax out;
  out.max = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
  const __m512 shift = _mm512_set1_ps(out.max == -std::numeric_limits<float>::infinity() ? 0.0f : out.max);
  auto z32 = [&](int64_t j) DNNB_AVX512_LAMBDA {
    Vecs<2> zz = keep_z ? Vecs<2>{{_mm512_loadu_ps(z + j), _mm512_loadu_ps(z + j + 16)}} : z2(j, z == nullptr);
    return Vecs<2>{{_mm512_sub_ps(zz.v[0], shift), _mm512_sub_ps(zz.v[1], shift)}};
  };
  auto z_tail = [&](int64_t j, __mmask16 m) DNNB_AVX512_LAMBDA {
    return _mm512_sub_ps(keep_z ? _mm512_maskz_loadu_ps(m, z + j) : z_of(j, m), shift);  // e^-inf = 0 outside m
  };
  out.sum = exp_sum_pass(n, z32, z_tail, [](const auto& v) DNNB_AVX512_LAMBDA { return exp_nonpositive<A>(v); },  // z <= max
                         z, next);
  return out;
}

// Loads 16 logits of a plain row (cross-entropy; softmax without mask and softcap), times
// `scale` when kScaled (softmax's scale != 1: x * 1 is x, so that multiply is left out
// otherwise): masked-off lanes are -inf.
template <class Fmt, bool kScaled = false>
struct PlainLogits {
  const typename Fmt::storage* x;
  float scale = 1;
  static constexpr bool kTryUnshifted = true;  // exp_row: see exp_row_unshifted
  DNNB_AVX512_INLINE __m512 scaled(__m512 v) const {
    if constexpr (kScaled) return _mm512_mul_ps(v, _mm512_set1_ps(scale));
    return v;
  }
  DNNB_AVX512_INLINE __m512 operator()(int64_t i, __mmask16 m) const {
    const __m512 v = scaled(m == 0xffff ? Fmt::load(x + i) : Fmt::load(x + i, m));
    return _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), m, v);
  }
  DNNB_AVX512_INLINE Vecs<2> any_order2(int64_t i) const {
    const Vecs<2> v = Fmt::load2_any_order(x + i);
    return {{scaled(v.v[0]), scaled(v.v[1])}};
  }
};

}  // namespace dnnb::avx512
