// embedding: y[t] = table[ids[t]]; an id outside [0, V) is bad input (torch raises an
// IndexError), never a read outside the table.
#include "reference/access.h"
#include "reference/layout.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::reference {

Status embedding(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "embedding"));
  auto d = ops::embedding_desc(problem);
  if (!d) return d.status();
  auto ids = Rows::of(inputs[0], "ids");
  if (!ids) return ids.status();
  auto table = Rows::of(inputs[1], "table");
  if (!table) return table.status();
  auto y = f64_output(outputs[0], {d->tokens, d->dim}, "y");
  if (!y) return y.status();
  const RowView id_row = ids->row(0);
  for (int64_t t = 0; t < d->tokens; ++t) {
    const double id = id_row[t];
    if (!(id >= 0 && id < static_cast<double>(d->vocab)))
      return Status::bad_input("embedding: ids[" + std::to_string(t) + "] = " + std::to_string(static_cast<int64_t>(id)) +
                               " is outside the table's " + std::to_string(d->vocab) + " rows");
    const RowView row = table->row(static_cast<int64_t>(id));
    for (int64_t c = 0; c < d->dim; ++c) (*y)[t * d->dim + c] = row[c];
  }
  return Status::ok();
}

}  // namespace dnnb::reference
