// embedding_bwd: dW = zeros, then dW[ids[t]] += dy[t] for every token, in float64 (the order of
// the additions does not matter at this precision for the check's tolerance).
#include "reference/embedding_bwd.h"

#include <string>

#include "reference/access.h"

namespace dnnb::reference {

Status embedding_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "embedding_bwd"));
  if (problem.shape.size() != 3)
    return Status::bad_input("embedding_bwd: shape " + shape_to_string(problem.shape) + " is not TxVxD");
  const int64_t tokens = problem.shape[0], vocab = problem.shape[1], dim = problem.shape[2];
  auto ids = Rows::of(inputs[0], "ids");
  if (!ids) return ids.status();
  auto dy = Rows::of(inputs[1], "dy");
  if (!dy) return dy.status();
  if (dy->rows() != tokens || dy->cols() != dim)
    return Status::bad_input("embedding_bwd: dy " + inputs[1].describe() + " is not [T, D] of " + problem.to_string());
  auto dw = f64_output(outputs[0], {vocab, dim}, "dW");
  if (!dw) return dw.status();
  for (int64_t i = 0; i < vocab * dim; ++i) (*dw)[i] = 0.0;
  const RowView id_row = ids->row(0);
  for (int64_t t = 0; t < tokens; ++t) {
    const double id = id_row[t];
    if (!(id >= 0 && id < static_cast<double>(vocab)))
      return Status::bad_input("embedding_bwd: ids[" + std::to_string(t) + "] = " +
                               std::to_string(static_cast<int64_t>(id)) + " is outside the table's " +
                               std::to_string(vocab) + " rows");
    const RowView row = dy->row(t);
    double* out = *dw + static_cast<int64_t>(id) * dim;
    for (int64_t c = 0; c < dim; ++c) out[c] += row[c];
  }
  return Status::ok();
}

}  // namespace dnnb::reference
