// The mLSTM's parallel stabilised form in float64, one query row at a time, as mlstm_kernels
// 2.0.6 torch/parallel/native/fw.py computes it: the log gate matrix, its row max m, D, the
// gated scores C~, the normaliser n = max(|sum C~|, exp(-m)) and h = C~ v / (n + eps). The
// bounds come from magnitude sums of the same intermediates (docs/numerics.md, "mLSTM").
#include "reference/mlstm.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/access.h"

namespace dnnb::reference {
namespace {

constexpr double kU32 = 0x1p-24;  // f32 unit roundoff: accumulations, scores, gates

}  // namespace

double log_sigmoid(double x) { return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x)); }

double mlstm_dtype_eps(DType dtype) {
  return dtype == DType::f16 ? 0x1p-10 : dtype == DType::bf16 ? 0x1p-7 : 0x1p-23;
}

Result<MlstmOperands> read_mlstm_operands(const Problem& problem, const std::vector<Tensor>& inputs,
                                          const std::vector<const char*>& extra_names) {
  auto d = ops::mlstm_desc(problem);
  if (!d) return d.status();
  MlstmOperands x;
  x.d = *d;
  x.dtype = problem.dtype;
  const size_t n = 5 + extra_names.size();
  if (inputs.size() < n)
    return Status::bad_input(problem.op + ": " + std::to_string(inputs.size()) + " inputs, the signature has " +
                             std::to_string(n));
  size_t at = 0;
  for (auto [dst, name] : {std::pair{&x.q, "q"}, {&x.k, "k"}, {&x.v, "v"}, {&x.i, "i"}, {&x.f, "f"}}) {
    auto t = dense_f64(inputs[at++], name);
    if (!t) return t.status();
    *dst = std::move(*t);
  }
  for (const char* name : extra_names) {
    auto t = dense_f64(inputs[at++], name);
    if (!t) return t.status();
    x.extra.insert(x.extra.end(), t->begin(), t->end());
  }
  x.log_f.resize(x.f.size());
  for (size_t e = 0; e < x.f.size(); ++e) x.log_f[e] = log_sigmoid(x.f[e]);
  return x;
}

void mlstm_row(const MlstmOperands& x, int64_t r, int64_t t, MlstmRow& row) {
  const auto& d = x.d;
  const double scale = d.scale();
  const int64_t g0 = r * d.s;  // the head's first gate
  const double* q = x.q.data() + (g0 + t) * d.dqk;
  row.log_d.assign(t + 1, 0.0);
  row.dgate.assign(t + 1, 0.0);
  row.score.assign(t + 1, 0.0);
  row.score_abs.assign(t + 1, 0.0);
  row.ctilde.assign(t + 1, 0.0);
  // logD[t, s] = sum_{r in (s, t]} logsigmoid(f[r]) + i[s], accumulated from s = t backwards.
  double span = 0;
  row.m = -std::numeric_limits<double>::infinity();
  for (int64_t s = t; s >= 0; --s) {
    row.log_d[s] = span + x.i[g0 + s];
    span += x.log_f[g0 + s];
    row.m = std::max(row.m, row.log_d[s]);
  }
  row.rowsum = 0;
  for (int64_t s = 0; s <= t; ++s) {
    const double* k = x.k.data() + (g0 + s) * d.dqk;
    double dot = 0, dot_abs = 0;
    for (int64_t e = 0; e < d.dqk; ++e) {
      dot += q[e] * k[e];
      dot_abs += std::fabs(q[e] * k[e]);
    }
    row.dgate[s] = std::exp(row.log_d[s] - row.m);
    row.score[s] = scale * dot;
    row.score_abs[s] = scale * dot_abs;
    row.ctilde[s] = row.score[s] * row.dgate[s];
    row.rowsum += row.ctilde[s];
  }
  row.n = std::max(std::fabs(row.rowsum), std::exp(-row.m));
  row.divisor = row.n + d.eps;
}

std::vector<double> mlstm_cumulative_gates(const MlstmOperands& x, int64_t r) {
  std::vector<double> c(x.d.s);
  double acc = 0;
  for (int64_t s = 0; s < x.d.s; ++s) c[s] = acc += x.log_f[r * x.d.s + s];
  return c;
}

double mlstm_log_gate_error(const std::vector<double>& c, const std::vector<double>& i, int64_t length, int64_t t,
                            int64_t s, double m) {
  const double levels = std::ceil(std::log2(static_cast<double>(std::max<int64_t>(length, 2))));
  return kU32 * (8 * (std::max(std::fabs(c[t]), std::fabs(c[s])) + std::fabs(i[s]) + std::fabs(m)) +
                 2 * levels * std::fabs(c[t] - c[s]));
}

Status mlstm(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_mlstm_operands(problem, inputs, {});
  if (!x) return x.status();
  const auto& d = x->d;
  DNNB_TRY(expect_arity(inputs, 5, outputs, 3, problem.op));
  auto h = f64_output(outputs[0], ops::mlstm_v_shape(d), "h");
  auto n = f64_output(outputs[1], ops::mlstm_gate_shape(d), "n");
  auto m = f64_output(outputs[2], ops::mlstm_gate_shape(d), "m");
  if (!h) return h.status();
  if (!n) return n.status();
  if (!m) return m.status();
  MlstmRow row;
  for (int64_t r = 0; r < d.batch * d.heads; ++r)
    for (int64_t t = 0; t < d.s; ++t) {
      mlstm_row(*x, r, t, row);
      const int64_t g = r * d.s + t;
      (*n)[g] = row.n;
      (*m)[g] = row.m;
      double* out = *h + g * d.dv;
      std::fill(out, out + d.dv, 0.0);
      for (int64_t s = 0; s <= t; ++s) {
        const double* v = x->v.data() + (r * d.s + s) * d.dv;
        for (int64_t e = 0; e < d.dv; ++e) out[e] += row.ctilde[s] * v[e];
      }
      for (int64_t e = 0; e < d.dv; ++e) out[e] /= row.divisor;
    }
  return Status::ok();
}

std::vector<OutputBound> mlstm_sequence_bounds(const MlstmOperands& xs, int64_t state_chunk) {
  const MlstmOperands* x = &xs;
  const auto& d = x->d;
  const double eps = mlstm_dtype_eps(x->dtype);
  const double dot_error = 8 * std::sqrt(static_cast<double>(d.dqk)) * kU32;
  double h_atol = 0, h_floor = 0, n_atol = 0, n_floor = 0, n_max = 0, m_atol = 0;
  MlstmRow row;
  std::vector<double> e_num(d.dv), mag(d.dv), gi(d.s);
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    const std::vector<double> c = mlstm_cumulative_gates(*x, r);
    std::copy(x->i.begin() + r * d.s, x->i.begin() + (r + 1) * d.s, gi.begin());
    for (int64_t t = 0; t < d.s; ++t) {
      mlstm_row(*x, r, t, row);
      const double sum_error = 8 * std::sqrt(static_cast<double>(t + 1)) * kU32;
      std::fill(e_num.begin(), e_num.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      double e_den = 0, state_den = 0, delta_m = 0, m_err = 0;
      for (int64_t s = 0; s <= t; ++s) {
        const double delta = mlstm_log_gate_error(c, gi, d.s, t, s, row.m);
        if (row.log_d[s] == row.m) delta_m = std::max(delta_m, delta);
        if (row.log_d[s] >= row.m - 2 * delta) m_err = std::max(m_err, row.m - row.log_d[s] + delta);
        // The error of C~[t, s]: the score's f32 sum over DQK, the gate's exponent, and for a
        // token of an earlier chunk the state rounded to the dtype for the product with q_t
        // (eps x the magnitude of q_t . k_s).
        const bool in_state = state_chunk > 0 && s < t / state_chunk * state_chunk;
        const double state = in_state ? eps * row.dgate[s] * row.score_abs[s] : 0.0;
        const double gated = row.dgate[s] * (dot_error * row.score_abs[s] + std::fabs(row.score[s]) * delta) + state;
        const double abs_c = std::fabs(row.ctilde[s]);
        const double* v = x->v.data() + (r * d.s + s) * d.dv;
        for (int64_t e = 0; e < d.dv; ++e) {
          e_num[e] += (abs_c * (2 * eps + sum_error) + gated) * std::fabs(v[e]);
          mag[e] += (abs_c * eps + state) * std::fabs(v[e]);
        }
        e_den += abs_c * sum_error + gated;
        state_den += state;
      }
      e_den += std::exp(-row.m) * delta_m;
      // The chunkwise form keeps m' = max(c[t], m[t]) (its state starts at m0 = 0), which moves
      // h by eps (e^(m' - m) - 1) / (n + eps e^(m' - m)) relative.
      const double shift = state_chunk > 0 ? std::max(c[t], row.m) - row.m : 0.0;
      const double form = d.eps * std::expm1(shift) / (row.n + d.eps * std::exp(shift));
      const double* in_v = x->v.data();
      for (int64_t e = 0; e < d.dv; ++e) {
        double acc = 0;
        for (int64_t s = 0; s <= t; ++s) acc += row.ctilde[s] * in_v[(r * d.s + s) * d.dv + e];
        const double h = std::fabs(acc) / row.divisor;
        h_atol = std::max(h_atol, (e_num[e] + h * e_den) / row.divisor + h * form);
        h_floor = std::max(h_floor, mag[e] / row.divisor);
      }
      n_atol = std::max(n_atol, e_den);
      n_floor = std::max(n_floor, state_den);
      n_max = std::max(n_max, row.n);
      m_atol = std::max(m_atol, m_err);
    }
  }
  const double e32 = 2 * kU32;
  OutputBound h{eps, h_atol, 2, h_floor};
  OutputBound n{e32, n_atol, 2, n_floor + e32 * n_max};
  OutputBound m{e32, m_atol, 2, m_atol};
  return {h, n, m};
}

Result<std::vector<OutputBound>> mlstm_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_mlstm_operands(problem, inputs, {});
  if (!x) return x.status();
  return mlstm_sequence_bounds(*x, 0);
}

}  // namespace dnnb::reference
