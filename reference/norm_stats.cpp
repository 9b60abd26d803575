// layernorm_stats and rmsnorm_stats in float64: two passes over each row (mean, then the
// variance about it) for layernorm, the mean of squares for rmsnorm; each rounded once to f32
// by the harness's store.
#include "reference/norm_stats.h"

#include <cmath>

#include "reference/access.h"

namespace dnnb::reference {
namespace {

Status norm_stats(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                  bool centered) {
  const char* op = centered ? "layernorm_stats" : "rmsnorm_stats";
  DNNB_TRY(expect_arity(inputs, 1, outputs, centered ? 2 : 1, op));
  auto eps = problem.get_double("eps", centered ? 1e-5 : 1e-6);
  if (!eps) return eps.status();
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  Shape stats = inputs[0].shape;
  stats.back() = 1;
  double* mean = nullptr;
  if (centered) {
    auto m = f64_output(outputs[0], stats, "mean");
    if (!m) return m.status();
    mean = *m;
  }
  auto rstd = f64_output(outputs[centered ? 1 : 0], stats, "rstd");
  if (!rstd) return rstd.status();
  const double n = static_cast<double>(x->cols());
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView row = x->row(r);
    double m = 0;
    if (centered) {
      for (int64_t c = 0; c < x->cols(); ++c) m += row[c];
      m /= n;
      mean[r] = m;
    }
    double q = 0;
    for (int64_t c = 0; c < x->cols(); ++c) q += (row[c] - m) * (row[c] - m);
    (*rstd)[r] = 1.0 / std::sqrt(q / n + *eps);
  }
  return Status::ok();
}

}  // namespace

Status layernorm_stats(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return norm_stats(problem, inputs, outputs, true);
}

Status rmsnorm_stats(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  return norm_stats(problem, inputs, outputs, false);
}

Result<std::vector<OutputBound>> norm_stats_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  if (inputs.size() != 1) return Status::bad_input(problem.op + ": expects one input (x)");
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  const double u = 0x1p-24;
  const double k = 8 * (std::sqrt(static_cast<double>(x->cols())) + 4) * u;
  std::vector<OutputBound> bounds;
  if (problem.op == "layernorm_stats") {
    double s = 0;
    for (int64_t r = 0; r < x->rows(); ++r) {
      const RowView row = x->row(r);
      double a = 0;
      for (int64_t c = 0; c < x->cols(); ++c) a += std::fabs(row[c]);
      a /= static_cast<double>(x->cols());
      s += a * a;
    }
    bounds.push_back({0, k * std::sqrt(s / static_cast<double>(x->rows())), 0, 0});
  }
  bounds.push_back({k, 0, 0, 0});
  return bounds;
}

}  // namespace dnnb::reference
