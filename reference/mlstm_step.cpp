// The mLSTM's recurrent step in float64, as mlstm_kernels 2.0.6
// torch/recurrent/native_step.py (mlstm_recurrent_step__native_fw) computes it:
//   m' = max(logsigmoid(f) + m, i), a = exp(logsigmoid(f) + m - m'), b = exp(i - m'),
//   C' = a C + b k v^T, n' = a n + b k, h = (q/sqrt(DQK)) C' / (max(|(q/sqrt(DQK)) . n'|, exp(-m')) + eps).
// The bounds come from magnitude sums of the same terms (docs/numerics.md, "mLSTM").
#include <algorithm>
#include <cmath>

#include "reference/access.h"
#include "reference/mlstm.h"

namespace dnnb::reference {
namespace {

constexpr double kU32 = 0x1p-24;

struct StepOperands {
  ops::MlstmDesc d;
  DType dtype = DType::f32;
  std::vector<double> q, k, v, i, f, c, n, m;
};

Result<StepOperands> read_step(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto d = ops::mlstm_desc(problem);
  if (!d) return d.status();
  if (inputs.size() != 8)
    return Status::bad_input(problem.op + ": " + std::to_string(inputs.size()) + " inputs, the signature has 8");
  StepOperands x;
  x.d = *d;
  x.dtype = problem.dtype;
  size_t at = 0;
  for (auto [dst, name] : {std::pair{&x.q, "q"}, {&x.k, "k"}, {&x.v, "v"}, {&x.i, "i"}, {&x.f, "f"}, {&x.c, "c"},
                           {&x.n, "n"}, {&x.m, "m"}}) {
    auto t = dense_f64(inputs[at++], name);
    if (!t) return t.status();
    *dst = std::move(*t);
  }
  return x;
}

// One head's step: the new state into c, n, m (in place) and the gates' factors.
struct StepGates {
  double log_f = 0, m_old = 0, m_new = 0, a = 0, b = 0;
};
StepGates step_state(int64_t dqk, int64_t dv, const double* k, const double* v, double i, double f, double* c,
                     double* n, double& m) {
  StepGates g;
  g.log_f = log_sigmoid(f);
  g.m_old = m;
  g.m_new = std::max(g.log_f + m, i);
  g.a = std::exp(g.log_f + m - g.m_new);
  g.b = std::exp(i - g.m_new);
  for (int64_t e = 0; e < dqk; ++e) {
    for (int64_t j = 0; j < dv; ++j) c[e * dv + j] = g.a * c[e * dv + j] + g.b * k[e] * v[j];
    n[e] = g.a * n[e] + g.b * k[e];
  }
  m = g.m_new;
  return g;
}

}  // namespace

Status mlstm_step(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_step(problem, inputs);
  if (!x) return x.status();
  const auto& d = x->d;
  DNNB_TRY(expect_arity(inputs, 8, outputs, 4, problem.op));
  auto h = f64_output(outputs[0], {d.batch, d.heads, d.dv}, "h");
  auto c = f64_output(outputs[1], ops::mlstm_c_state_shape(d), "c_new");
  auto n = f64_output(outputs[2], ops::mlstm_n_state_shape(d), "n_new");
  auto m = f64_output(outputs[3], ops::mlstm_m_state_shape(d), "m_new");
  for (auto* t : {&h, &c, &n, &m})
    if (!*t) return t->status();
  std::copy(x->c.begin(), x->c.end(), *c);
  std::copy(x->n.begin(), x->n.end(), *n);
  std::copy(x->m.begin(), x->m.end(), *m);
  const double scale = d.scale();
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    double* cr = *c + r * d.dqk * d.dv;
    double* nr = *n + r * d.dqk;
    const double* q = x->q.data() + r * d.dqk;
    step_state(d.dqk, d.dv, x->k.data() + r * d.dqk, x->v.data() + r * d.dv, x->i[r], x->f[r], cr, nr, (*m)[r]);
    double qn = 0;
    for (int64_t e = 0; e < d.dqk; ++e) qn += scale * q[e] * nr[e];
    const double divisor = std::max(std::fabs(qn), std::exp(-(*m)[r])) + d.eps;
    for (int64_t j = 0; j < d.dv; ++j) {
      double num = 0;
      for (int64_t e = 0; e < d.dqk; ++e) num += scale * q[e] * cr[e * d.dv + j];
      (*h)[r * d.dv + j] = num / divisor;
    }
  }
  return Status::ok();
}

Result<std::vector<OutputBound>> mlstm_step_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_step(problem, inputs);
  if (!x) return x.status();
  const auto& d = x->d;
  const double eps = mlstm_dtype_eps(x->dtype);
  const double dot_error = 8 * std::sqrt(static_cast<double>(d.dqk)) * kU32;
  const double scale = d.scale();
  double h_atol = 0, h_floor = 0, c_atol = 0, n_atol = 0, m_atol = 0;
  std::vector<double> c(d.dqk * d.dv), n(d.dqk), c_err(d.dqk * d.dv), n_err(d.dqk);
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    std::copy(x->c.begin() + r * d.dqk * d.dv, x->c.begin() + (r + 1) * d.dqk * d.dv, c.begin());
    std::copy(x->n.begin() + r * d.dqk, x->n.begin() + (r + 1) * d.dqk, n.begin());
    double m = x->m[r];
    const double* k = x->k.data() + r * d.dqk;
    const double* v = x->v.data() + r * d.dv;
    const double* q = x->q.data() + r * d.dqk;
    // Each state term is off by its exponent's error (f32 values of the gates and states).
    const double log_f = log_sigmoid(x->f[r]);
    const double delta = 8 * kU32 * (std::fabs(log_f) + std::fabs(m) + std::fabs(x->i[r]) + std::fabs(std::max(log_f + m, x->i[r])));
    for (int64_t e = 0; e < d.dqk; ++e) {
      for (int64_t j = 0; j < d.dv; ++j) c_err[e * d.dv + j] = std::fabs(c[e * d.dv + j]);
      n_err[e] = std::fabs(n[e]);
    }
    const StepGates g = step_state(d.dqk, d.dv, k, v, x->i[r], x->f[r], c.data(), n.data(), m);
    for (int64_t e = 0; e < d.dqk; ++e) {
      for (int64_t j = 0; j < d.dv; ++j) {
        c_err[e * d.dv + j] = (g.a * c_err[e * d.dv + j] + g.b * std::fabs(k[e] * v[j])) * (delta + 4 * kU32);
        c_atol = std::max(c_atol, c_err[e * d.dv + j]);
      }
      n_err[e] = (g.a * n_err[e] + g.b * std::fabs(k[e])) * (delta + 4 * kU32);
      n_atol = std::max(n_atol, n_err[e]);
    }
    m_atol = std::max(m_atol, 4 * kU32 * (std::fabs(log_f) + std::fabs(g.m_old)) + 2 * kU32 * std::fabs(m));
    // h: q . C' and q . n' over DQK in f32, with C' and n' possibly rounded to the dtype for the
    // product (the package's step does so), plus the states' own errors.
    double qn = 0, e_den = 0;
    for (int64_t e = 0; e < d.dqk; ++e) {
      qn += scale * q[e] * n[e];
      e_den += scale * std::fabs(q[e]) * (std::fabs(n[e]) * (eps + dot_error) + n_err[e]);
    }
    e_den += std::exp(-m) * delta;
    const double divisor = std::max(std::fabs(qn), std::exp(-m)) + d.eps;
    for (int64_t j = 0; j < d.dv; ++j) {
      double num = 0, e_num = 0, mag = 0;
      for (int64_t e = 0; e < d.dqk; ++e) {
        num += scale * q[e] * c[e * d.dv + j];
        mag += scale * std::fabs(q[e] * c[e * d.dv + j]);
        e_num += scale * std::fabs(q[e]) * (std::fabs(c[e * d.dv + j]) * (eps + dot_error) + c_err[e * d.dv + j]);
      }
      h_atol = std::max(h_atol, (e_num + std::fabs(num / divisor) * e_den) / divisor);
      h_floor = std::max(h_floor, eps * mag / divisor);
    }
  }
  const double e32 = 2 * kU32;
  return std::vector<OutputBound>{OutputBound{eps, h_atol, 2, h_floor}, OutputBound{e32, c_atol, 2, c_atol},
                                  OutputBound{e32, n_atol, 2, n_atol}, OutputBound{e32, m_atol, 2, m_atol}};
}

Status mlstm_recurrent_state(const ops::MlstmDesc& d, const std::vector<double>& k, const std::vector<double>& v,
                             const std::vector<double>& i, const std::vector<double>& f, int64_t length, Tensor& c,
                             Tensor& n, Tensor& m) {
  const int64_t rows = d.batch * d.heads;
  if (static_cast<int64_t>(k.size()) != rows * length * d.dqk || static_cast<int64_t>(v.size()) != rows * length * d.dv ||
      static_cast<int64_t>(i.size()) != rows * length || static_cast<int64_t>(f.size()) != rows * length)
    return Status::bad_input("mlstm_recurrent_state: the sequence's k, v, i, f are not [rows, length, ...]");
  std::vector<double> cs(d.dqk * d.dv), ns(d.dqk);
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(cs.begin(), cs.end(), 0.0);
    std::fill(ns.begin(), ns.end(), 0.0);
    double ms = 0;
    for (int64_t s = 0; s < length; ++s)
      step_state(d.dqk, d.dv, k.data() + (r * length + s) * d.dqk, v.data() + (r * length + s) * d.dv,
                 i[r * length + s], f[r * length + s], cs.data(), ns.data(), ms);
    for (int64_t e = 0; e < d.dqk * d.dv; ++e) store_element(c.host_data(), c.dtype, r * d.dqk * d.dv + e, cs[e]);
    for (int64_t e = 0; e < d.dqk; ++e) store_element(n.host_data(), n.dtype, r * d.dqk + e, ns[e]);
    store_element(m.host_data(), m.dtype, r, ms);
  }
  return Status::ok();
}

}  // namespace dnnb::reference
