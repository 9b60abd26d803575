// layernorm_stats and rmsnorm_stats: the f32 statistics a norm's forward saves for its backward,
// one value per row. The statistics are layernorm's (layernorm_rows.h) and rmsnorm's own (row_reduce.h): per
// 4096-column block an exact two-pass mean and sum of squared deviations merged with Chan's
// update (a constant row gets its value as its mean exactly and rstd = 1 / sqrt(eps)); the
// f32 sum of squares for rmsnorm. Rows go to threads, or split into column chunks when there
// are fewer rows than threads (for_each_row).
#include <cmath>

#include "kernels/avx512/layernorm_rows.h"

namespace dnnb::avx512 {
namespace {

template <class Fmt>
Status run_layernorm_stats(OpCall& call) {
  auto epsilon = norm_epsilon(call, 1e-5);
  if (!epsilon) return epsilon.status();
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto mean = host_elements(call.outputs.at(0));
  if (!mean) return mean.status();
  auto rstd = host_elements(call.outputs.at(1));
  if (!rstd) return rstd.status();
  if (mean->rows() != x->rows() || rstd->rows() != x->rows())
    return Status::bad_input("avx512 layernorm_stats: mean and rstd must hold one value per row of x");
  for_each_layernorm_row<Fmt>(*x, *epsilon, [&](int64_t r, int64_t c0, int64_t, float row_mean, float row_rstd) {
    if (c0 != 0) return;
    *mean->row<float>(r) = row_mean;
    *rstd->row<float>(r) = row_rstd;
  });
  return Status::ok();
}

template <class Fmt>
Status run_rmsnorm_stats(OpCall& call) {
  using T = typename Fmt::storage;
  auto epsilon = norm_epsilon(call, 1e-6);
  if (!epsilon) return epsilon.status();
  auto x = host_rows(call.inputs.at(0));
  if (!x) return x.status();
  auto rstd = host_elements(call.outputs.at(0));
  if (!rstd) return rstd.status();
  if (rstd->rows() != x->rows()) return Status::bad_input("avx512 rmsnorm_stats: rstd must hold one value per row of x");
  const int64_t cols = x->cols();
  for_each_row<float>(
      x->rows(), cols,
      [&](int64_t r, int64_t c0, int64_t n) {
        return reduce_span<Fmt, Reduce::sum_squares>(read_span<T>(*x, r, c0, n, 0), n);
      },
      [](float a, float b) { return a + b; },
      [&](int64_t r, int64_t c0, int64_t, float sum_squares) {
        if (c0 != 0) return;
        *rstd->row<float>(r) = 1.0f / std::sqrt(sum_squares / static_cast<float>(cols) + *epsilon);
      });
  return Status::ok();
}

DNNB_REGISTER(register_kernel("layernorm_stats", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_layernorm_stats<decltype(fmt)>(call); });
}));
DNNB_REGISTER(register_kernel("rmsnorm_stats", {DType::f32, DType::f16, DType::bf16}, nullptr, [](OpCall& call) {
  return with_format(call.problem.dtype, [&](auto fmt) { return run_rmsnorm_stats<decltype(fmt)>(call); });
}));

}  // namespace
}  // namespace dnnb::avx512
