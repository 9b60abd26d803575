// rmsnorm over the last dim, two forms:
//   torch (F.rms_norm, Llama):  y = x / sqrt(mean(x^2) + eps) * w
//   gemma (Gemma RMSNorm):       y = x / sqrt(mean(x^2) + eps) * (1 + w)
// In float64 the forms differ only in the weight; the dtype round trips each model does
// (Llama casts before the weight multiply, Gemma after) are the kernels' business.
#include <cmath>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

Status rmsnorm(const Problem& problem, const Inputs& inputs, Outputs& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "rmsnorm"));
  auto eps = problem.get_double("eps", 1e-6);
  if (!eps) return eps.status();
  const std::string form = problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input("reference rmsnorm: parameter form='" + form + "' is not torch or gemma");
  const double weight_offset = form == "gemma" ? 1.0 : 0.0;
  const Shape& shape = inputs[0].shape;
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto w = Rows::of(inputs[1], "w");
  if (!w) return w.status();
  if (inputs[1].shape != Shape{x->cols()})
    return Status::bad_input("reference rmsnorm: w must have shape [" + std::to_string(x->cols()) + "]");
  auto y = f64_output(outputs[0], shape, "y");
  if (!y) return y.status();

  const RowView w_row = w->row(0);
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView x_row = x->row(r);
    double mean_square = 0;
    for (int64_t c = 0; c < x->cols(); ++c) mean_square += x_row[c] * x_row[c];
    mean_square /= static_cast<double>(x->cols());
    const double inv_rms = 1.0 / std::sqrt(mean_square + *eps);
    double* out = *y + r * x->cols();
    for (int64_t c = 0; c < x->cols(); ++c) out[c] = x_row[c] * inv_rms * (weight_offset + w_row[c]);
  }
  return Status::ok();
}

}  // namespace dnnb::reference
