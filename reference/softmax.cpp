// softmax over the last dim: t = softcap > 0 ? c tanh(x / c) : x; z = scale t + mask;
// y = exp(z - max z) / sum exp(z - max z). A row whose z are all -inf gives y = 0, as
// F.scaled_dot_product_attention does (a naive softmax would give NaN).
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

Status softmax(const Problem& problem, const Inputs& inputs, Outputs& outputs) {
  const bool has_mask = inputs.size() == 2;
  DNNB_TRY(expect_arity(inputs, has_mask ? 2 : 1, outputs, 1, "softmax"));
  auto scale = problem.get_double("scale", 1.0);
  if (!scale) return scale.status();
  auto softcap = problem.get_double("softcap", 0.0);
  if (!softcap) return softcap.status();

  const Shape& shape = inputs[0].shape;
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  std::optional<Rows> mask;
  if (has_mask) {
    auto mask_rows = broadcast_rows(inputs[1], shape, "mask");
    if (!mask_rows) return mask_rows.status();
    mask = *mask_rows;
  }
  auto y = f64_output(outputs[0], shape, "y");
  if (!y) return y.status();

  const double minus_inf = -std::numeric_limits<double>::infinity();
  std::vector<double> z(x->cols());
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView x_row = x->row(r);
    double z_max = minus_inf;
    for (int64_t c = 0; c < x->cols(); ++c) {
      const double t = *softcap > 0 ? *softcap * std::tanh(x_row[c] / *softcap) : x_row[c];
      z[c] = *scale * t + (mask ? mask->row(r)[c] : 0.0);
      if (z[c] > z_max) z_max = z[c];
    }
    double* out = *y + r * x->cols();
    if (z_max == minus_inf) {  // fully masked row
      for (int64_t c = 0; c < x->cols(); ++c) out[c] = 0.0;
      continue;
    }
    double denominator = 0;
    for (int64_t c = 0; c < x->cols(); ++c) denominator += std::exp(z[c] - z_max);
    for (int64_t c = 0; c < x->cols(); ++c) out[c] = std::exp(z[c] - z_max) / denominator;
  }
  return Status::ok();
}

}  // namespace dnnb::reference
