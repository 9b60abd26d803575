// Gating references: per element, the activation g of the gate a and its derivative, in
// float64 as torch defines them (F.silu; F.gelu with approximate='tanh' and its backward).
#include "reference/glu.h"

#include <cmath>
#include <numbers>

#include "reference/access.h"

namespace dnnb::reference {
namespace {

// g(a) and g'(a) of one gate value.
struct Gate {
  double value;
  double slope;
};

Gate silu_gate(double a) {
  const double s = 1.0 / (1.0 + std::exp(-a));
  return {a * s, s * (1.0 + a * (1.0 - s))};
}

// torch's GeluBackward with approximate='tanh' (aten/src/ATen/native/cpu/Activation.cpp).
Gate gelu_tanh_gate(double a) {
  const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
  const double t = std::tanh(k * (a + c * a * a * a));
  const double value = 0.5 * a * (1.0 + t);
  const double slope = 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * k * (1.0 + 3.0 * c * a * a);
  return {value, slope};
}

// Forward: y = g(a) b. Backward: da = dy b g'(a), db = dy g(a). All operands have a's shape;
// outputs are contiguous, so element c of row r is at r * cols + c.
Status gate(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, Gate (*g)(double), bool backward,
            const char* op) {
  DNNB_TRY(expect_arity(inputs, backward ? 3 : 2, outputs, backward ? 2 : 1, op));
  const Shape& shape = inputs[0].shape;
  for (const Tensor& t : inputs)
    if (t.shape != shape)
      return Status::bad_input(std::string(op) + ": inputs of shapes " + shape_to_string(shape) + " and " +
                               shape_to_string(t.shape));
  auto a = Rows::of(inputs[0], "a");
  if (!a) return a.status();
  auto b = Rows::of(inputs[1], "b");
  if (!b) return b.status();
  if (!backward) {
    auto y = f64_output(outputs[0], shape, "y");
    if (!y) return y.status();
    for (int64_t r = 0; r < a->rows(); ++r) {
      const RowView ar = a->row(r), br = b->row(r);
      double* out = *y + r * a->cols();
      for (int64_t c = 0; c < a->cols(); ++c) out[c] = g(ar[c]).value * br[c];
    }
    return Status::ok();
  }
  auto dy = Rows::of(inputs[2], "dy");
  if (!dy) return dy.status();
  auto da = f64_output(outputs[0], shape, "da");
  if (!da) return da.status();
  auto db = f64_output(outputs[1], shape, "db");
  if (!db) return db.status();
  for (int64_t r = 0; r < a->rows(); ++r) {
    const RowView ar = a->row(r), br = b->row(r), dyr = dy->row(r);
    double* da_row = *da + r * a->cols();
    double* db_row = *db + r * a->cols();
    for (int64_t c = 0; c < a->cols(); ++c) {
      const Gate v = g(ar[c]);
      da_row[c] = dyr[c] * br[c] * v.slope;
      db_row[c] = dyr[c] * v.value;
    }
  }
  return Status::ok();
}

}  // namespace

Status swiglu(const Problem&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  return gate(in, out, silu_gate, false, "swiglu");
}
Status geglu(const Problem&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  return gate(in, out, gelu_tanh_gate, false, "geglu");
}
Status swiglu_bwd(const Problem&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  return gate(in, out, silu_gate, true, "swiglu_bwd");
}
Status geglu_bwd(const Problem&, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  return gate(in, out, gelu_tanh_gate, true, "geglu_bwd");
}

}  // namespace dnnb::reference
