// embedding_bwd: dW[v] = sum of dy[t] over the tokens with ids[t] = v, zero for rows no token
// takes. Deterministic by row ownership: the ids are checked (one outside [0, V) makes the run
// bad_input naming it, before anything is written) and bucketed by row with a stable counting
// sort, so each row's tokens are listed in increasing position; then rows go to threads in
// blocks, and each row sums its tokens' dy rows in that order into an f32 accumulator (one
// vector add per 16 values) and rounds it once into dW. The order of the additions depends only
// on ids: every run gives the same bits, whatever the thread count.
#include <algorithm>
#include <vector>

#include "kernels/avx512/avx512_common.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::avx512 {
namespace {

// Token positions bucketed by id: the tokens of row v are order[start[v] .. start[v + 1]), in
// increasing position.
struct Buckets {
  std::vector<int64_t> start;
  std::vector<int64_t> order;
};

Result<Buckets> bucket_ids(const Tensor& ids, int64_t vocab) {
  const void* base = ids.host_data();
  if (base == nullptr) return Status::bad_input("avx512 embedding_bwd: ids are not in host memory");
  if (ids.dtype != DType::i64 && ids.dtype != DType::i32)
    return Status::unsupported(std::string("avx512 embedding_bwd: ids of dtype ") + dtype_name(ids.dtype));
  const int64_t n = ids.numel(), stride = ids.ndim() ? ids.strides[0] : 1;
  std::vector<int64_t> id(static_cast<size_t>(n));
  Buckets b;
  b.start.assign(static_cast<size_t>(vocab + 1), 0);
  for (int64_t t = 0; t < n; ++t) {
    id[t] = ids.dtype == DType::i64 ? static_cast<const int64_t*>(base)[t * stride]
                                    : static_cast<const int32_t*>(base)[t * stride];
    if (id[t] < 0 || id[t] >= vocab)
      return Status::bad_input("embedding_bwd: ids[" + std::to_string(t) + "] = " + std::to_string(id[t]) +
                               " is outside the table's " + std::to_string(vocab) + " rows");
    ++b.start[id[t] + 1];
  }
  for (int64_t v = 0; v < vocab; ++v) b.start[v + 1] += b.start[v];
  std::vector<int64_t> next(b.start.begin(), b.start.end() - 1);
  b.order.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) b.order[next[id[t]]++] = t;
  return b;
}

// Row v of dW: its tokens' dy rows summed in f32, rounded once (zero when it has none).
template <class Fmt>
DNNB_AVX512 void dw_row(const HostRows& dy, const HostRows& dw, const Buckets& b, int64_t v, float* acc) {
  using T = typename Fmt::storage;
  const int64_t D = dw.cols();
  const int64_t first = b.start[v], last = b.start[v + 1];
  std::fill(acc, acc + D, 0.0f);
  for (int64_t j = first; j < last; ++j) {
    const T* src = read_span<T>(dy, b.order[j], 0, D, 0);
    int64_t c = 0;
    for (; c + 16 <= D; c += 16) _mm512_storeu_ps(acc + c, _mm512_add_ps(_mm512_loadu_ps(acc + c), Fmt::load(src + c)));
    if (c < D) {
      const __mmask16 m = tail_mask(D - c);
      _mm512_mask_storeu_ps(acc + c, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, acc + c), Fmt::load(src + c, m)));
    }
  }
  T* dst = write_span<T>(dw, v, 0, D, 3);
  int64_t c = 0;
  for (; c + 16 <= D; c += 16) Fmt::store(dst + c, _mm512_loadu_ps(acc + c));
  if (c < D) Fmt::store(dst + c, _mm512_maskz_loadu_ps(tail_mask(D - c), acc + c), tail_mask(D - c));
  commit_span(dw, v, 0, D, static_cast<const T*>(dst));
}

Status run_embedding_bwd(OpCall& call) {
  auto d = ops::embedding_bwd_operands(call, "avx512 embedding_bwd");
  if (!d) return d.status();
  const int64_t tokens = d->tokens, vocab = d->vocab, dim = d->dim;
  const Tensor& dy = call.inputs[1];
  const Tensor& dw = call.outputs[0];
  auto buckets = bucket_ids(call.inputs[0], vocab);
  if (!buckets) return buckets.status();
  auto dy_rows = host_rows(dy);
  if (!dy_rows) return dy_rows.status();
  auto dw_rows = host_rows(dw);
  if (!dw_rows) return dw_rows.status();
  // Blocks of rows per task: about 64 KiB of dW each, so a table of short rows is not one task
  // per row.
  const int64_t per_task = std::max<int64_t>(1, 16384 / dim);
  return with_format(dw.dtype, [&](auto fmt) -> Status {
    using Fmt = decltype(fmt);
    parallel_tasks((vocab + per_task - 1) / per_task, vocab * dim + tokens * dim, [&](int64_t task) {
      float* acc = scratch<float>(2, dim);
      const int64_t v1 = std::min(vocab, (task + 1) * per_task);
      for (int64_t v = task * per_task; v < v1; ++v) dw_row<Fmt>(*dy_rows, *dw_rows, *buckets, v, acc);
    });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("embedding_bwd", {DType::f32, DType::bf16}, nullptr, run_embedding_bwd));

}  // namespace
}  // namespace dnnb::avx512
