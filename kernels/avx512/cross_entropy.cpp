// cross_entropy: mean over kept rows of logsumexp(row) - row[target]. Whole rows per thread:
// sum e^x in one pass where that is safe (exp_row_unshifted), else the row's max, then sum
// e^(x - max) from cache (one exponential per element, the next row prefetched meanwhile);
// rows cut into column chunks: online statistics per chunk, merged in column order.
// logsumexp = max + log sum. The per-row losses are summed in f64 on the calling thread in
// row order (deterministic, and n_rows terms would otherwise add ~n_rows/2 ulp). All rows
// ignored gives NaN, as torch.
#include "kernels/avx512/cross_entropy_rows.h"

namespace dnnb::avx512 {
namespace {

template <class Fmt>
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
  auto loss_of = [&](int64_t r, const OnlineSoftmax& row) {
    const T picked = x->row<const T>(r)[targets->target[r] * x->col_stride()];
    return row.max + std::log(row.sum) - Fmt::to_float(picked);
  };
  const int64_t cols = x->cols();
  if (plan_row_chunks(rows, cols).chunks == 1) {
    // Whole rows per task: one exponential per element (logits_row_stats).
    parallel_tasks(rows, rows * std::max<int64_t>(cols, 1), [&](int64_t r) {
      if (targets->ignored(r)) return;
      loss[r] = loss_of(r, logits_row_stats<Fmt>(read_span<T>(*x, r, 0, cols, 0), cols, next_row_of(*x, r)));
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

}  // namespace
}  // namespace dnnb::avx512
