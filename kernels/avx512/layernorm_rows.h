// layernorm's row statistics, shared by layernorm (which writes y from them) and layernorm_stats
// (which saves them): per 4096-column block an exact two-pass mean and sum of squared deviations,
// merged over blocks and column chunks with Chan's update (row_reduce.h), then the biased
// variance's rstd = 1 / sqrt(m2 / cols + eps).
#pragma once
#include <cmath>

#include "kernels/avx512/row_reduce.h"

namespace dnnb::avx512 {

// The problem's eps (default `fallback`) as the f32 the kernels add to the variance.
inline Result<float> norm_epsilon(const OpCall& call, double fallback) {
  auto eps = call.problem.get_double("eps", fallback);
  if (!eps) return eps.status();
  return static_cast<float>(*eps);
}

// for_each_row over x's rows with layernorm's statistics: finish(r, c0, n, mean, rstd) once per
// (row, column chunk) as for_each_row's finish, with the whole row's mean and rstd.
template <class Fmt, class Finish>
void for_each_layernorm_row(const HostRows& x, float epsilon, Finish&& finish) {
  using T = typename Fmt::storage;
  const int64_t cols = x.cols();
  for_each_row<MeanM2>(
      x.rows(), cols,
      [&](int64_t r, int64_t c0, int64_t n) { return mean_m2_span<Fmt>(read_span<T>(x, r, c0, n, 0), n); },
      merge_mean_m2,
      [&](int64_t r, int64_t c0, int64_t n, const MeanM2& row) {
        finish(r, c0, n, row.mean, 1.0f / std::sqrt(row.m2 / static_cast<float>(cols) + epsilon));
      });
}

}  // namespace dnnb::avx512
