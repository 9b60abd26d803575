// Products in float64: every operand read into a dense row-major f64 copy (any dtype, any
// layout), then one loop nest, ordered i-k-j so the inner loop walks rows of b and y.
#include "reference/matmul.h"

#include "reference/access.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::reference {
namespace {

// y[b] = a[b] (m x k) times bt[b] (n x k) transposed, + bias; dense row-major f64 operands.
void gemm_f64(const ops::GemmDesc& d, const std::vector<double>& a, const std::vector<double>& b_kn,
              const std::vector<double>* bias, double* y) {
  for (int64_t batch = 0; batch < d.batch; ++batch) {
    const double* A = a.data() + batch * d.m * d.k;
    const double* B = b_kn.data() + batch * d.k * d.n;
    double* Y = y + batch * d.m * d.n;
    for (int64_t i = 0; i < d.m; ++i) {
      double* row = Y + i * d.n;
      for (int64_t j = 0; j < d.n; ++j) row[j] = bias ? (*bias)[j] : 0.0;
      for (int64_t p = 0; p < d.k; ++p) {
        const double aip = A[i * d.k + p];
        const double* brow = B + p * d.n;
        for (int64_t j = 0; j < d.n; ++j) row[j] += aip * brow[j];
      }
    }
  }
}

// w [n, k] (dense) as [k, n].
std::vector<double> transposed(const std::vector<double>& w, int64_t n, int64_t k) {
  std::vector<double> t(w.size());
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) t[p * n + j] = w[j * k + p];
  return t;
}

}  // namespace

Status matmul(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "matmul"));
  auto d = ops::matmul_desc(problem);
  if (!d) return d.status();
  auto a = dense_f64(inputs[0], "a");
  if (!a) return a.status();
  auto b = dense_f64(inputs[1], "b");
  if (!b) return b.status();
  auto y = f64_output(outputs[0], inputs[0].shape.size() == 3 ? Shape{d->batch, d->m, d->n} : Shape{d->m, d->n}, "y");
  if (!y) return y.status();
  if (static_cast<int64_t>(a->size()) != d->batch * d->m * d->k || static_cast<int64_t>(b->size()) != d->batch * d->k * d->n)
    return Status::bad_input("reference matmul: operands do not match " + problem.to_string());
  gemm_f64(*d, *a, *b, nullptr, *y);
  return Status::ok();
}

Status linear(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto d = ops::linear_desc(problem);
  if (!d) return d.status();
  DNNB_TRY(expect_arity(inputs, d->bias ? 3 : 2, outputs, 1, "linear"));
  auto x = dense_f64(inputs[0], "x");
  if (!x) return x.status();
  auto w = dense_f64(inputs[1], "w");
  if (!w) return w.status();
  std::vector<double> bias;
  if (d->bias) {
    auto b = dense_f64(inputs[2], "b");
    if (!b) return b.status();
    bias = std::move(*b);
  }
  auto y = f64_output(outputs[0], {d->m, d->n}, "y");
  if (!y) return y.status();
  gemm_f64(*d, *x, transposed(*w, d->n, d->k), d->bias ? &bias : nullptr, *y);
  return Status::ok();
}

Status gemv(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "gemv"));
  auto d = ops::gemv_desc(problem);
  if (!d) return d.status();
  auto w = dense_f64(inputs[0], "w");
  if (!w) return w.status();
  auto x = dense_f64(inputs[1], "x");
  if (!x) return x.status();
  auto y = f64_output(outputs[0], {d->m, d->n}, "y");
  if (!y) return y.status();
  gemm_f64(*d, *x, transposed(*w, d->n, d->k), nullptr, *y);
  return Status::ok();
}

Status dot(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  DNNB_TRY(expect_arity(inputs, 2, outputs, 1, "dot"));
  auto a = Rows::of(inputs[0], "a");
  if (!a) return a.status();
  auto b = Rows::of(inputs[1], "b");
  if (!b) return b.status();
  if (a->rows() != b->rows() || a->cols() != b->cols())
    return Status::bad_input("reference dot: a and b differ in shape (" + problem.to_string() + ")");
  auto y = f64_output(outputs[0], without_last_dim(inputs[0].shape), "y");
  if (!y) return y.status();
  for (int64_t r = 0; r < a->rows(); ++r) {
    const RowView ar = a->row(r), br = b->row(r);
    double s = 0;
    for (int64_t c = 0; c < a->cols(); ++c) s += ar[c] * br[c];
    (*y)[r] = s;
  }
  return Status::ok();
}

}  // namespace dnnb::reference
