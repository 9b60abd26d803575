// One-row reductions shared by reduce.cpp, layernorm.cpp and rmsnorm.cpp: sum, sum of
// differences from a shift, sum of squares (about a shift), and max of a contiguous span. Four vector accumulators (64 partial
// results) are folded into a running total every kBlock elements, so a sum adds at most
// ~64 + n/kBlock terms in any one f32 chain. Elements are loaded in whatever lane order is
// cheapest for the format (load2_any_order): each lane still sums a fixed set of elements.
#pragma once
#include <cmath>
#include <limits>

#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512 {

// deviations: sum of x - shift, and squared_deviations: sum of (x - shift)^2 (layernorm);
// sum_squares: sum of x^2 (norm2, rmsnorm). Apart from sum and sum_squares so that those do not
// pay a subtraction per vector.
enum class Reduce { sum, deviations, sum_squares, squared_deviations, max };

template <Reduce K>
struct Accumulate {
  static constexpr bool is_max = K == Reduce::max;
  DNNB_AVX512_INLINE static __m512 init() {
    return is_max ? _mm512_set1_ps(-std::numeric_limits<float>::infinity()) : _mm512_setzero_ps();
  }
  DNNB_AVX512_INLINE static __m512 add(__m512 acc, __m512 v, __m512 shift) {
    if constexpr (K == Reduce::max) return _mm512_max_ps(acc, v);
    if constexpr (K == Reduce::deviations) return _mm512_add_ps(acc, _mm512_sub_ps(v, shift));
    if constexpr (K == Reduce::sum_squares) return _mm512_fmadd_ps(v, v, acc);
    if constexpr (K == Reduce::squared_deviations) {
      const __m512 d = _mm512_sub_ps(v, shift);
      return _mm512_fmadd_ps(d, d, acc);
    }
    return _mm512_add_ps(acc, v);
  }
  DNNB_AVX512_INLINE static __m512 combine(__m512 a, __m512 b) {
    return is_max ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b);
  }
  DNNB_AVX512_INLINE static float horizontal(__m512 a) {
    return is_max ? _mm512_reduce_max_ps(a) : _mm512_reduce_add_ps(a);
  }
  // Two partial results of one row (column chunks, in order).
  static float merge(float a, float b) {
    if constexpr (K == Reduce::max) return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
    return a + b;
  }
};

constexpr int64_t kReduceBlock = 4096;

// Sum, sum of x - shift, sum of x^2, sum of (x - shift)^2, or max (NaN if any element is NaN)
// of p[0, n), in f32.
// `next` (the thread's next row: reduce.cpp with DNNB_AVX512_PREFETCH=2) is prefetched into
// L2 alongside, 64 columns per step; `ahead` as above.
template <class Fmt, Reduce K, bool kPrefetch, bool kAhead>
DNNB_AVX512_INLINE float reduce_span_impl(const typename Fmt::storage* p, int64_t n, float shift_value,
                                          const NextRow& next, const Ahead& ahead) {
  using A = Accumulate<K>;
  const __m512 shift = _mm512_set1_ps(shift_value);
  __m512 total = A::init();
  __mmask16 nan = 0;  // max only: VMAXPS drops NaN, so it is tracked on the side
  for (int64_t b = 0; b < n; b += kReduceBlock) {
    const int64_t end = std::min(n, b + kReduceBlock);
    __m512 a0 = A::init(), a1 = A::init(), a2 = A::init(), a3 = A::init();
    int64_t i = b;
    for (; i + 64 <= end; i += 64) {
      if constexpr (kPrefetch) next.fetch(i, 64);
      if constexpr (kAhead) fetch_ahead(p, i, ahead);
      const Vecs<2> v01 = Fmt::load2_any_order(p + i), v23 = Fmt::load2_any_order(p + i + 32);
      const __m512 v0 = v01.v[0], v1 = v01.v[1], v2 = v23.v[0], v3 = v23.v[1];
      a0 = A::add(a0, v0, shift);
      a1 = A::add(a1, v1, shift);
      a2 = A::add(a2, v2, shift);
      a3 = A::add(a3, v3, shift);
      if constexpr (A::is_max)
        nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
    }
    for (; i < end; i += 16) {
      const __mmask16 m = tail_mask(std::min<int64_t>(16, end - i));
      const __m512 v = Fmt::load(p + i, m);
      a0 = _mm512_mask_mov_ps(a0, m, A::add(a0, v, shift));  // masked-off lanes add nothing
      if constexpr (A::is_max) nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
    }
    total = A::combine(total, A::combine(A::combine(a0, a1), A::combine(a2, a3)));
  }
  return nan ? NAN : A::horizontal(total);
}

// Max of 16-bit floats (f16, bf16) on integers: key(h) = h ^ ((h >> 15) & 0x7fff), read as
// int16, orders every non-NaN value as the float does (sign-magnitude to two's complement;
// -0 just below +0), so VPMAXSW takes 32 elements per uop without converting them. NaNs
// are the keys above +Inf's or below -Inf's, so a VPMINSW beside it detects them (VMAXPS
// drops NaN). Per 32 elements: 4 ALU uops (shift, VPTERNLOGD, max, min), where the f32 path
// takes 7.5 for f16 (two 2-uop VCVTPH2PS, two VMAXPS, a compare and half a mask OR) and 5.5
// for bf16. The max of a set is exact, so the result is the float path's, except that a row
// whose largest values are -0 and +0 gives +0 (a float max would give either, by lane order).
template <class Fmt, bool kPrefetch, bool kAhead>
DNNB_AVX512_INLINE float max16_span_impl(const uint16_t* p, int64_t n, const NextRow& next, const Ahead& ahead) {
  constexpr int16_t inf = Fmt::dtype == DType::f16 ? 0x7c00 : 0x7f80;  // +Inf's bits and key
  const __m512i low15 = _mm512_set1_epi16(0x7fff);
  auto key = [&](__m512i h) DNNB_AVX512_LAMBDA {
    return _mm512_ternarylogic_epi32(h, _mm512_srai_epi16(h, 15), low15, 0x78);  // h ^ (s & 0x7fff)
  };
  __m512i hi0 = _mm512_set1_epi16(INT16_MIN), hi1 = hi0;
  __m512i lo0 = _mm512_set1_epi16(INT16_MAX), lo1 = lo0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if constexpr (kPrefetch) next.fetch(i, 64);
    if constexpr (kAhead) fetch_ahead(p, i, ahead);
    const __m512i k0 = key(_mm512_loadu_si512(p + i)), k1 = key(_mm512_loadu_si512(p + i + 32));
    hi0 = _mm512_max_epi16(hi0, k0);
    hi1 = _mm512_max_epi16(hi1, k1);
    lo0 = _mm512_min_epi16(lo0, k0);
    lo1 = _mm512_min_epi16(lo1, k1);
  }
  for (; i < n; i += 32) {
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << std::min<int64_t>(32, n - i)) - 1);
    const __m512i k = key(_mm512_maskz_loadu_epi16(m, p + i));
    hi0 = _mm512_mask_max_epi16(hi0, m, hi0, k);
    lo0 = _mm512_mask_min_epi16(lo0, m, lo0, k);
  }
  hi0 = _mm512_max_epi16(hi0, hi1);
  lo0 = _mm512_min_epi16(lo0, lo1);
  const __m256i hi256 = _mm256_max_epi16(_mm512_castsi512_si256(hi0), _mm512_extracti64x4_epi64(hi0, 1));
  const __m256i lo256 = _mm256_min_epi16(_mm512_castsi512_si256(lo0), _mm512_extracti64x4_epi64(lo0, 1));
  alignas(32) int16_t his[16], los[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(his), hi256);
  _mm256_store_si256(reinterpret_cast<__m256i*>(los), lo256);
  int16_t hi = INT16_MIN, lo = INT16_MAX;
  for (int l = 0; l < 16; ++l) {
    hi = std::max(hi, his[l]);
    lo = std::min(lo, los[l]);
  }
  if (n == 0) return -std::numeric_limits<float>::infinity();
  if (hi > inf || lo < -inf - 1) return NAN;  // -Inf's key is -inf - 1
  const uint16_t bits = static_cast<uint16_t>(hi ^ (hi < 0 ? 0x7fff : 0));  // the key is its own inverse
  return Fmt::to_float(bits);
}

// The loops without prefetching are compiled apart: an empty NextRow then costs nothing per
// step (a per-step check costs ~8% on rows in cache).
template <class Fmt, Reduce K, bool kAhead>
DNNB_AVX512_INLINE float reduce_span_ahead(const typename Fmt::storage* p, int64_t n, float shift_value,
                                           const NextRow& next, const Ahead& ahead) {
  if constexpr (K == Reduce::max && Fmt::dtype != DType::f32)
    return next.empty() ? max16_span_impl<Fmt, false, kAhead>(p, n, next, ahead)
                        : max16_span_impl<Fmt, true, kAhead>(p, n, next, ahead);
  else
    return next.empty() ? reduce_span_impl<Fmt, K, false, kAhead>(p, n, shift_value, next, ahead)
                        : reduce_span_impl<Fmt, K, true, kAhead>(p, n, shift_value, next, ahead);
}

template <class Fmt, Reduce K>
DNNB_AVX512 float reduce_span(const typename Fmt::storage* p, int64_t n, float shift_value = 0.0f,
                              const NextRow& next = NextRow{}, const Ahead& ahead = Ahead{}) {
  return ahead.bytes > 0 ? reduce_span_ahead<Fmt, K, true>(p, n, shift_value, next, ahead)
                         : reduce_span_ahead<Fmt, K, false>(p, n, shift_value, next, ahead);
}

// Mean and sum of squared deviations of a span, merged across spans with Chan's update.
struct MeanM2 {
  double count = 0;
  float mean = 0;
  float m2 = 0;
};
inline MeanM2 merge_mean_m2(const MeanM2& a, const MeanM2& b) {
  const double count = a.count + b.count;
  if (b.count == 0) return a;
  if (a.count == 0) return b;
  const float delta = b.mean - a.mean;
  MeanM2 out;
  out.count = count;
  out.mean = a.mean + delta * static_cast<float>(b.count / count);
  out.m2 = a.m2 + b.m2 + delta * delta * static_cast<float>(a.count * b.count / count);
  return out;
}

// Exact two-pass statistics per kReduceBlock block (mean, then squares about it: the block
// is still in L1 for the second pass), blocks merged with Chan's update: one pass over
// memory without the cancellation of sum/sum-of-squares. The mean is the block's first
// element plus the mean of the differences from it: a constant block (a row of zero
// variance) then has its value as its mean exactly, every x - mean is 0 and layernorm gives
// y = b exactly, as torch does, where a plain f32 sum / n can be off by an ulp of x, which
// 1/sqrt(var + eps) then multiplies by up to 1/sqrt(eps). Rows of nearly equal values gain
// the same way: the differences from the first element carry no common part to round off.
template <class Fmt>
MeanM2 mean_m2_span(const typename Fmt::storage* p, int64_t n) {
  MeanM2 acc;
  for (int64_t b = 0; b < n; b += kReduceBlock) {
    const int64_t len = std::min(kReduceBlock, n - b);
    MeanM2 block;
    block.count = static_cast<double>(len);
    const float first = Fmt::to_float(p[b]);
    block.mean = first + reduce_span<Fmt, Reduce::deviations>(p + b, len, first) / static_cast<float>(len);
    block.m2 = reduce_span<Fmt, Reduce::squared_deviations>(p + b, len, block.mean);
    acc = merge_mean_m2(acc, block);
  }
  return acc;
}

// A 1-D tensor (weights, biases) as a contiguous array: the tensor itself when unit-stride,
// else a copy into `storage`.
template <class T>
Result<const T*> contiguous_vector(const Tensor& t, std::vector<T>& storage) {
  auto e = host_elements(t);
  if (!e) return e.status();
  if (t.ndim() <= 1 && (t.ndim() == 0 || t.strides[0] == 1 || t.shape[0] <= 1))
    return static_cast<const T*>(t.host_data());
  storage.resize(static_cast<size_t>(e->rows()));
  for (int64_t i = 0; i < e->rows(); ++i) storage[i] = *e->row<const T>(i);
  return static_cast<const T*>(storage.data());
}

}  // namespace dnnb::avx512
