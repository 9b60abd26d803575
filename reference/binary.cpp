// Elementwise binary references with numpy broadcasting: both inputs are read as views of
// the output's shape (stride 0 on repeated dims), so row r of each view is row r of y.
#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

namespace {

double add_of(double a, double b) { return a + b; }
double sub_of(double a, double b) { return a - b; }
double mul_of(double a, double b) { return a * b; }
double div_of(double a, double b) { return a / b; }

Status map_pairs(const Inputs& inputs, Outputs& outputs, double (*f)(double, double), const char* op) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, op));
  auto y_shape = broadcast_shapes(inputs[0].shape, inputs[1].shape);
  if (!y_shape) return y_shape.status();
  auto a = broadcast_rows(inputs[0], *y_shape, "a");
  if (!a) return a.status();
  auto b = broadcast_rows(inputs[1], *y_shape, "b");
  if (!b) return b.status();
  auto y = f64_output(outputs[0], *y_shape, "y");
  if (!y) return y.status();
  for (int64_t r = 0; r < a->rows(); ++r) {
    const RowView a_row = a->row(r);
    const RowView b_row = b->row(r);
    double* out = *y + r * a->cols();
    for (int64_t c = 0; c < a->cols(); ++c) out[c] = f(a_row[c], b_row[c]);
  }
  return Status::ok();
}

}  // namespace

Status add(const Problem&, const Inputs& in, Outputs& out) { return map_pairs(in, out, add_of, "add"); }
Status sub(const Problem&, const Inputs& in, Outputs& out) { return map_pairs(in, out, sub_of, "sub"); }
Status mul(const Problem&, const Inputs& in, Outputs& out) { return map_pairs(in, out, mul_of, "mul"); }
Status div(const Problem&, const Inputs& in, Outputs& out) { return map_pairs(in, out, div_of, "div"); }

}  // namespace dnnb::reference
