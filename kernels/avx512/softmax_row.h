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

// Loads 16 logits of a plain row (cross-entropy): masked-off lanes are -inf.
template <class Fmt>
struct PlainLogits {
  const typename Fmt::storage* x;
  DNNB_AVX512_INLINE __m512 operator()(int64_t i, __mmask16 m) const {
    const __m512 v = m == 0xffff ? Fmt::load(x + i) : Fmt::load(x + i, m);
    return _mm512_mask_mov_ps(_mm512_set1_ps(-std::numeric_limits<float>::infinity()), m, v);
  }
};

}  // namespace dnnb::avx512
