// Last-dim reductions: x [..., N] -> y [...]; a 1-D x gives a 0-d y (one row, one value).
// Sums accumulate in double: for the row lengths of the suite (<= 10^6 elements of at most
// 16-bit-mantissa data) the accumulated rounding is far below any tolerance.
#include <cmath>
#include <limits>

#include "reference/access.h"
#include "reference/reference.h"

namespace dnnb::reference {

namespace {

double row_sum(const RowView& x) {
  double s = 0;
  for (int64_t c = 0; c < x.cols; ++c) s += x[c];
  return s;
}

double row_mean(const RowView& x) { return row_sum(x) / static_cast<double>(x.cols); }

// torch.amax: NaN anywhere in the row gives NaN.
double row_max(const RowView& x) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < x.cols; ++c) {
    const double v = x[c];
    if (std::isnan(v)) return v;
    if (v > m) m = v;
  }
  return m;
}

double row_norm2(const RowView& x) {
  double s = 0;
  for (int64_t c = 0; c < x.cols; ++c) s += x[c] * x[c];
  return std::sqrt(s);
}

Status reduce_rows(const Inputs& inputs, Outputs& outputs, double (*f)(const RowView&), const char* op) {
  DNNB_TRY(expect_arity(inputs, 1, outputs, 1, op));
  auto x = Rows::of(inputs[0], "x");
  if (!x) return x.status();
  auto y = f64_output(outputs[0], without_last_dim(inputs[0].shape), "y");
  if (!y) return y.status();
  for (int64_t r = 0; r < x->rows(); ++r) (*y)[r] = f(x->row(r));
  return Status::ok();
}

}  // namespace

Status sum(const Problem&, const Inputs& in, Outputs& out) { return reduce_rows(in, out, row_sum, "sum"); }
Status mean(const Problem&, const Inputs& in, Outputs& out) { return reduce_rows(in, out, row_mean, "mean"); }
Status max(const Problem&, const Inputs& in, Outputs& out) { return reduce_rows(in, out, row_max, "max"); }
Status norm2(const Problem&, const Inputs& in, Outputs& out) { return reduce_rows(in, out, row_norm2, "norm2"); }

}  // namespace dnnb::reference
