// lerp: y = a + w (b - a), w a tensor broadcast to a's shape or the scalar `weight` param.
#include <optional>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

Status lerp(const Problem& problem, const Inputs& inputs, Outputs& outputs) {
  const bool weight_is_tensor = inputs.size() == 3;
  DNNB_TRY(expect_arity(inputs, weight_is_tensor ? 3 : 2, outputs, 1, "lerp"));
  auto weight = problem.get_double("weight", 0.5);
  if (!weight) return weight.status();
  const Shape& shape = inputs[0].shape;
  auto a = Rows::of(inputs[0], "a");
  if (!a) return a.status();
  auto b = broadcast_rows(inputs[1], shape, "b");
  if (!b) return b.status();
  std::optional<Rows> w;
  if (weight_is_tensor) {
    auto w_rows = broadcast_rows(inputs[2], shape, "w");
    if (!w_rows) return w_rows.status();
    w = *w_rows;
  }
  auto y = f64_output(outputs[0], shape, "y");
  if (!y) return y.status();
  for (int64_t r = 0; r < a->rows(); ++r) {
    const RowView a_row = a->row(r);
    const RowView b_row = b->row(r);
    double* out = *y + r * a->cols();
    for (int64_t c = 0; c < a->cols(); ++c) {
      const double w_rc = weight_is_tensor ? w->row(r)[c] : *weight;
      out[c] = a_row[c] + w_rc * (b_row[c] - a_row[c]);
    }
  }
  return Status::ok();
}

}  // namespace dnnb::reference
