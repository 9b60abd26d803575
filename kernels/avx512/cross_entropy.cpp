// cross_entropy: mean over kept rows of logsumexp(row) - row[target]. Whole rows per thread:
// the row's max, then sum e^(x - max) from cache (one exponential per element, the next row
// prefetched meanwhile); rows cut into column chunks: online statistics per chunk, merged in
// column order. logsumexp = max + log sum. The per-row losses are summed in f64 on the
// calling thread in row order (deterministic, and n_rows terms would otherwise add
// ~n_rows/2 ulp). All rows ignored gives NaN, as torch.
// Variant `table` (bf16, whole rows): one pass, e^x of each logit looked up (bf16_exp_table).
#include <cfloat>

#include "kernels/avx512/cross_entropy_rows.h"

namespace dnnb::avx512 {
namespace {

// e^x for every bf16 code x, from f64 and rounded once to f32: +inf above ~88.7, 0 below
// ~-103.9, NaN for NaN. Made once (65536 scalar exponentials).
const float* bf16_exp_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (size_t code = 0; code < t.size(); ++code) {
      const double e = std::exp(static_cast<double>(bf16_to_f32(static_cast<uint16_t>(code))));
      t[code] = e > FLT_MAX ? INFINITY : static_cast<float>(e);  // a double past FLT_MAX does not convert
    }
    return t;
  }();
  return table.data();
}

struct ExpTableSums {
  float max_e = 0;  // the largest e^x: e^(the row's max)
  float sum = 0;    // of e^x; NaN once any x was NaN
};

// Variant `table`, bf16, a whole row in one pass: sum_j e^(x_j) and max_j e^(x_j) with each
// e^(x_j) one gather from bf16_exp_table, where the default takes a max pass and then ~15
// vector uops of exponential per 16 logits (exp_row). Order does not matter in a sum and a
// max: 32 logits per 64-byte load, even ones by an AND and odd ones by a shift. The row comes
// from DRAM in this pass, so the loop prefetches `ahead` of its reads as the elementwise ops do
// (eltwise_ahead_bytes; the default prefetches the next row during its exponential pass instead). Not yet timed or checked on a CPU with
// AVX-512 (session 16 wrote it after its device time ran out): docs/avx512.md, "Sixth round".
DNNB_AVX512 ExpTableSums exp_table_sums(const uint16_t* x, int64_t n, const float* table, const Ahead& ahead) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
  const __m512i low = _mm512_set1_epi32(0xffff);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (ahead.bytes > 0) fetch_ahead(x, i, ahead, 32);
    const __m512i w = _mm512_loadu_si512(x + i);
    const __m512 e0 = _mm512_i32gather_ps(_mm512_and_si512(w, low), table, 4);
    const __m512 e1 = _mm512_i32gather_ps(_mm512_srli_epi32(w, 16), table, 4);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
    m0 = _mm512_max_ps(m0, e0);
    m1 = _mm512_max_ps(m1, e1);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = tail_mask(std::min<int64_t>(16, n - i));
    const __m512i codes = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + i));
    const __m512 e = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, codes, table, 4);  // 0 outside m
    s0 = _mm512_add_ps(s0, e);
    m0 = _mm512_max_ps(m0, e);
  }
  return {_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)), _mm512_reduce_add_ps(_mm512_add_ps(s0, s1))};
}

template <class Fmt, bool kTable = false>
Status run_cross_entropy(OpCall& call) {
  using T = typename Fmt::storage;
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto loss_out = host_elements(call.outputs.at(0));
  if (!loss_out) return loss_out.status();
  const int64_t rows = x->rows();
  auto targets = read_targets(call, rows, x->cols());
  if (!targets) return targets.status();
  std::vector<float> loss(static_cast<size_t>(rows), 0.0f);
  auto picked = [&](int64_t r) { return Fmt::to_float(x->row<const T>(r)[targets->target[r] * x->col_stride()]); };
  auto loss_of = [&](int64_t r, const OnlineSoftmax& row) { return row.max + std::log(row.sum) - picked(r); };
  const int64_t cols = x->cols();
  if (plan_row_chunks(rows, cols).chunks == 1) {
    // Whole rows per task: max pass, then one exponential per element (logits_row_stats).
    const float* table = nullptr;
    if constexpr (kTable) table = bf16_exp_table();
    parallel_tasks(rows, rows * std::max<int64_t>(cols, 1), [&](int64_t r) {
      if (targets->ignored(r)) return;
      const T* row = read_span<T>(*x, r, 0, cols, 0);
      if constexpr (kTable) {
        // log sum e^x without the max shift holds while no e^x overflows, the sum stays finite
        // and the largest term is far from underflow: then the terms that underflow (x < -87)
        // are below 2^-66 of the sum. Other rows (logits past ~+80 or all below ~-41, a NaN)
        // take the default's path.
        const ExpTableSums t = exp_table_sums(row, cols, table, ahead_of(*x, r, 0, cols, eltwise_ahead_bytes));
        if (t.max_e >= 0x1p-60f && t.sum < INFINITY) {
          loss[r] = std::log(t.sum) - picked(r);
          return;
        }
      }
      loss[r] = loss_of(r, logits_row_stats<Fmt>(row, cols, next_row_of(*x, r)));
    });
  } else {
    for_each_row<OnlineSoftmax>(
        rows, cols,
        [&](int64_t r, int64_t c0, int64_t n) {
          if (targets->ignored(r)) return OnlineSoftmax{};
          return logits_stats<Fmt>(read_span<T>(*x, r, c0, n, 0), n);
        },
        merge_online,
        [&](int64_t r, int64_t c0, int64_t, const OnlineSoftmax& row) {
          if (c0 != 0 || targets->ignored(r)) return;
          loss[r] = loss_of(r, row);
        });
  }
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) total += loss[r];
  const double mean = targets->kept == 0 ? NAN : total / static_cast<double>(targets->kept);
  *loss_out->row<T>(0) = Fmt::from_float(static_cast<float>(mean));
  return Status::ok();
}

DNNB_REGISTER(register_kernel("cross_entropy", {DType::f32, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_cross_entropy<decltype(fmt)>(call); });
}));
DNNB_REGISTER(register_kernel("cross_entropy", {DType::bf16}, nullptr, [](OpCall& call) {
  return run_cross_entropy<BF16, true>(call);
}, "table"));

}  // namespace
}  // namespace dnnb::avx512
