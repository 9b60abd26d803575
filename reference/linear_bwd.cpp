// linear_bwd in float64: every operand read into a dense row-major f64 copy (any dtype, any
// layout), the B M rows of a 3-D x and dy taken as one list of tokens, then one loop nest per
// output, ordered so that the inner loop walks rows of w, x and the outputs.
#include "reference/linear_bwd.h"

#include "reference/access.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::reference {

Status linear_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto d = ops::linear_bwd_desc(problem);
  if (!d) return d.status();
  DNNB_TRY(expect_arity(inputs, 3, outputs, d->bias ? 3 : 2, "linear_bwd"));
  const int64_t rows = d->batch * d->m, n = d->n, k = d->k;
  auto x = dense_f64(inputs[0], "x");
  if (!x) return x.status();
  auto w = dense_f64(inputs[1], "w");
  if (!w) return w.status();
  auto dy = dense_f64(inputs[2], "dy");
  if (!dy) return dy.status();
  if (static_cast<int64_t>(x->size()) != rows * k || static_cast<int64_t>(w->size()) != n * k ||
      static_cast<int64_t>(dy->size()) != rows * n)
    return Status::bad_input("reference linear_bwd: operands do not match " + problem.to_string());
  auto dx = f64_output(outputs[0], inputs[0].shape, "dx");
  if (!dx) return dx.status();
  auto dw = f64_output(outputs[1], {n, k}, "dw");
  if (!dw) return dw.status();
  // dx[t, :] = sum_o dy[t, o] w[o, :]
  for (int64_t t = 0; t < rows; ++t) {
    double* out = *dx + t * k;
    for (int64_t c = 0; c < k; ++c) out[c] = 0;
    for (int64_t o = 0; o < n; ++o) {
      const double g = (*dy)[t * n + o];
      const double* wrow = w->data() + o * k;
      for (int64_t c = 0; c < k; ++c) out[c] += g * wrow[c];
    }
  }
  // dw[o, :] = sum_t dy[t, o] x[t, :]
  for (int64_t i = 0; i < n * k; ++i) (*dw)[i] = 0;
  for (int64_t t = 0; t < rows; ++t) {
    const double* xrow = x->data() + t * k;
    for (int64_t o = 0; o < n; ++o) {
      const double g = (*dy)[t * n + o];
      double* out = *dw + o * k;
      for (int64_t c = 0; c < k; ++c) out[c] += g * xrow[c];
    }
  }
  if (d->bias) {
    auto db = f64_output(outputs[2], {n}, "db");
    if (!db) return db.status();
    for (int64_t o = 0; o < n; ++o) (*db)[o] = 0;
    for (int64_t t = 0; t < rows; ++t)
      for (int64_t o = 0; o < n; ++o) (*db)[o] += (*dy)[t * n + o];
  }
  return Status::ok();
}

}  // namespace dnnb::reference
