// Backward of the activations: dx = dy f'(x) per element, in float64 as torch's autograd
// defines f' (aten/src/ATen/native/cpu/Activation.cpp: GeluBackward, SiluBackward).
#include "reference/act_bwd.h"

#include <cmath>
#include <numbers>

#include "reference/access.h"
#include "suites/ops/act_bwd_common.h"

namespace dnnb::reference {
namespace {

double gelu_slope(double x) {
  const double cdf = 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2));
  const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  return cdf + x * pdf;
}

double gelu_tanh_slope(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
  const double t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x);
}

double silu_slope(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s * (1.0 + x * (1.0 - s));
}

// dx = dy f'(x); dx is contiguous, so element c of row r is at r * cols + c.
Status backward(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, double (*slope)(double),
                const char* op) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, op));
  const Shape& shape = inputs[0].shape;
  if (inputs[1].shape != shape)
    return Status::bad_input(std::string(op) + ": x " + shape_to_string(shape) + " and dy " +
                             shape_to_string(inputs[1].shape) + " differ in shape");
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto dy = Rows::of(inputs[1], "dy");
  if (!dy) return dy.status();
  auto dx = f64_output(outputs[0], shape, "dx");
  if (!dx) return dx.status();
  for (int64_t r = 0; r < x->rows(); ++r) {
    const RowView xr = x->row(r), dyr = dy->row(r);
    double* out = *dx + r * x->cols();
    for (int64_t c = 0; c < x->cols(); ++c) out[c] = dyr[c] * slope(xr[c]);
  }
  return Status::ok();
}

}  // namespace

Status gelu_bwd(const Problem& problem, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  auto tanh_form = ops::gelu_bwd_tanh(problem);
  if (!tanh_form) return tanh_form.status();
  return backward(in, out, *tanh_form ? gelu_tanh_slope : gelu_slope, "gelu_bwd");
}
Status silu_bwd(const Problem&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  return backward(in, out, silu_slope, "silu_bwd");
}

}  // namespace dnnb::reference
