// Elementwise unary references: one scalar function per op, applied to every element.
#include <cmath>
#include <numbers>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

namespace {

double relu_of(double x) { return x > 0 ? x : (std::isnan(x) ? x : 0.0); }
double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_of(double x) { return std::tanh(x); }
double exp_of(double x) { return std::exp(x); }
double silu_of(double x) { return x * sigmoid_of(x); }
double gelu_of(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh_of(double x) {
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

}  // namespace

// y is contiguous with x's logical shape, so row r of x is row r of y.
Status map_elements(const Inputs& inputs, Outputs& outputs, const std::function<double(double)>& f, const char* op) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, op));
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto y = f64_output(outputs[0], inputs[0].shape, "y");
  if (!y) return y.status();
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView row = x->row(r);
    double* out = *y + r * x->cols();
    for (int64_t c = 0; c < x->cols(); ++c) out[c] = f(row[c]);
  }
  return Status::ok();
}

Status relu(const Problem&, const Inputs& in, Outputs& out) { return map_elements(in, out, relu_of, "relu"); }
Status sigmoid(const Problem&, const Inputs& in, Outputs& out) { return map_elements(in, out, sigmoid_of, "sigmoid"); }
Status tanh(const Problem&, const Inputs& in, Outputs& out) { return map_elements(in, out, tanh_of, "tanh"); }
Status exp(const Problem&, const Inputs& in, Outputs& out) { return map_elements(in, out, exp_of, "exp"); }
Status silu(const Problem&, const Inputs& in, Outputs& out) { return map_elements(in, out, silu_of, "silu"); }
Status gelu(const Problem&, const Inputs& in, Outputs& out) { return map_elements(in, out, gelu_of, "gelu"); }
Status gelu_tanh(const Problem&, const Inputs& in, Outputs& out) {
  return map_elements(in, out, gelu_tanh_of, "gelu_tanh");
}

}  // namespace dnnb::reference
