// layernorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b with the biased
// variance (divide by N), as F.layer_norm. Two passes over the row: mean, then variance
// about the mean, so that large means do not cancel.
#include <cmath>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

Status layernorm(const Problem& problem, const Inputs& inputs, Outputs& outputs) {
  DNNB_TRY(expect_arity(inputs, 3, outputs, 1, "layernorm"));
  auto eps = problem.get_double("eps", 1e-5);
  if (!eps) return eps.status();
  const Shape& shape = inputs[0].shape;
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto w = Rows::of(inputs[1], "w");
  if (!w) return w.status();
  auto b = Rows::of(inputs[2], "b");
  if (!b) return b.status();
  if (inputs[1].shape != Shape{x->cols()} || inputs[2].shape != Shape{x->cols()})
    return Status::bad_input("reference layernorm: w and b must have shape [" + std::to_string(x->cols()) + "]");
  auto y = f64_output(outputs[0], shape, "y");
  if (!y) return y.status();

  const RowView w_row = w->row(0);
  const RowView b_row = b->row(0);
  const double n = static_cast<double>(x->cols());
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView x_row = x->row(r);
    double mean = 0;
    for (int64_t c = 0; c < x->cols(); ++c) mean += x_row[c];
    mean /= n;
    double variance = 0;
    for (int64_t c = 0; c < x->cols(); ++c) variance += (x_row[c] - mean) * (x_row[c] - mean);
    variance /= n;
    const double inv_std = 1.0 / std::sqrt(variance + *eps);
    double* out = *y + r * x->cols();
    for (int64_t c = 0; c < x->cols(); ++c) out[c] = (x_row[c] - mean) * inv_std * w_row[c] + b_row[c];
  }
  return Status::ok();
}

}  // namespace dnnb::reference
