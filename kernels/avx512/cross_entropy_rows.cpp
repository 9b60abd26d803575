#include "kernels/avx512/cross_entropy_rows.h"

namespace dnnb::avx512 {

Result<CrossEntropyTargets> read_targets(const OpCall& call, int64_t rows, int64_t classes) {
  CrossEntropyTargets t;
  auto ignore = call.problem.get_int("ignore_index", -100);
  if (!ignore) return ignore.status();
  t.ignore_index = *ignore;
  const Tensor& target = call.inputs.at(1);
  if (target.dtype != DType::i64) return Status::bad_input("cross_entropy: target must be i64");
  auto e = host_elements(target);
  if (!e) return e.status();
  if (e->rows() != rows)
    return Status::bad_input("cross_entropy: target has " + std::to_string(e->rows()) + " elements for " +
                             std::to_string(rows) + " rows of logits");
  t.target.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t v = *e->row<const int64_t>(r);
    t.target[r] = v;
    if (v == t.ignore_index) continue;
    if (v < 0 || v >= classes)
      return Status::bad_input("cross_entropy: target[" + std::to_string(r) + "] = " + std::to_string(v) +
                               " is outside [0, " + std::to_string(classes) + ")");
    ++t.kept;
  }
  return t;
}

}  // namespace dnnb::avx512
