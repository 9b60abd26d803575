// What cross_entropy and cross_entropy_bwd share: the targets (validated once, on the
// calling thread, so kernels never fail mid-way), the count of kept rows, and the online
// logsumexp statistics of one row (softmax_row.h).
#pragma once
#include <vector>

#include "kernels/avx512/softmax_row.h"

namespace dnnb::avx512 {

struct CrossEntropyTargets {
  std::vector<int64_t> target;  // per row
  int64_t ignore_index = -100;
  int64_t kept = 0;             // rows whose target is not ignore_index
  bool ignored(int64_t r) const { return target[r] == ignore_index; }
};

// Reads `target` (i64, one per row of logits) and checks every kept one is a class index.
Result<CrossEntropyTargets> read_targets(const OpCall& call, int64_t rows, int64_t classes);

// Online statistics of a column chunk (rows cut into chunks): ~1.25 exponentials per element.
template <class Fmt>
DNNB_AVX512 OnlineSoftmax logits_stats(const typename Fmt::storage* x, int64_t n) {
  return online_softmax_span(n, PlainLogits<Fmt>{x});
}

// A whole row (rows >= threads): the sum of e^x in one pass where that is safe (most rows:
// exp_row_unshifted, softmax_row.h), else its max, then the sum of e^(x - max) from cache: one
// exponential per element, the next row prefetched into L2 meanwhile (exp_row). For bf16
// the exponentials are of the half tier: the sum's relative error stays below 3e-6, so the
// loss moves by at most 3e-6 against a tolerance of 2 bf16 eps (1.6e-2) of the loss.
template <class Fmt>
DNNB_AVX512 OnlineSoftmax logits_row_stats(const typename Fmt::storage* x, int64_t n, const NextRow& next) {
  return exp_row<accuracy_for<Fmt>>(n, PlainLogits<Fmt>{x}, nullptr, false, next);
}

}  // namespace dnnb::avx512
