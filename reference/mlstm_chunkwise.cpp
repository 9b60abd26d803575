// The mLSTM's chunkwise form in float64, a formulation of its own beside the parallel one, as
// mlstm_kernels 2.0.6 torch/chunkwise/native/fw.py computes it: the states (C, n, m) start at
// zero (m0 = 0) and are carried across chunks of L tokens (the last chunk may be shorter); inside
// a chunk, h combines the state's contribution with the chunk's own causal pairs:
//   b[t] = sum_{r in chunk, r <= t} logF[r], m_inter = b[t] + m_state,
//   logD[t,s] = b[t] - b[s] + i[s] (s in the chunk, s <= t), m[t] = max(m_inter, max_s logD),
//   num = e^(m_inter - m) scale q C + sum_s e^(logD - m) score v, den likewise with n and 1,
//   h = num / (max(|den|, e^-m) + eps);
// then with g = b[last], a[s] = g - b[s] + i[s], m' = max(g + m_state, max_s a[s]):
//   C' = e^(g + m_state - m') C + sum_s e^(a[s] - m') k_s v_s^T, n' likewise with k_s.
// h differs from the parallel form's only through eps (docs/ops-family5.md, "The math").
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/access.h"
#include "reference/mlstm.h"

namespace dnnb::reference {
namespace {

constexpr double kU32 = 0x1p-24;

}  // namespace

Status mlstm_chunkwise(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_mlstm_operands(problem, inputs, {});
  if (!x) return x.status();
  const auto& d = x->d;
  DNNB_TRY(expect_arity(inputs, 5, outputs, 4, problem.op));
  auto h = f64_output(outputs[0], ops::mlstm_v_shape(d), "h");
  auto c_last = f64_output(outputs[1], ops::mlstm_c_state_shape(d), "c_last");
  auto n_last = f64_output(outputs[2], ops::mlstm_n_state_shape(d), "n_last");
  auto m_last = f64_output(outputs[3], ops::mlstm_m_state_shape(d), "m_last");
  for (auto* t : {&h, &c_last, &n_last, &m_last})
    if (!*t) return t->status();
  const double scale = d.scale();
  const int64_t L = d.chunk;
  const int64_t len_max = std::min(L, d.s);  // chunk= may exceed S: one partial chunk
  std::vector<double> b(len_max), log_d(len_max), score(len_max), num(d.dv);
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    double* C = *c_last + r * d.dqk * d.dv;
    double* N = *n_last + r * d.dqk;
    double& M = (*m_last)[r];
    std::fill(C, C + d.dqk * d.dv, 0.0);
    std::fill(N, N + d.dqk, 0.0);
    M = 0;
    const int64_t g0 = r * d.s;
    for (int64_t j0 = 0; j0 < d.s; j0 += L) {
      const int64_t len = std::min(L, d.s - j0);
      double acc = 0;
      for (int64_t l = 0; l < len; ++l) b[l] = acc += x->log_f[g0 + j0 + l];
      for (int64_t l = 0; l < len; ++l) {
        const int64_t t = j0 + l;
        const double* q = x->q.data() + (g0 + t) * d.dqk;
        // The chunk's own pairs, their exponents summed over the span (s, t] only.
        double span = 0, m_intra = -std::numeric_limits<double>::infinity();
        for (int64_t z = l; z >= 0; --z) {
          log_d[z] = span + x->i[g0 + j0 + z];
          span += x->log_f[g0 + j0 + z];
          m_intra = std::max(m_intra, log_d[z]);
        }
        const double m_inter = b[l] + M;
        const double m = std::max(m_inter, m_intra);
        const double w_inter = std::exp(m_inter - m);
        double den = 0;
        for (int64_t e = 0; e < d.dqk; ++e) den += w_inter * scale * q[e] * N[e];
        for (int64_t j = 0; j < d.dv; ++j) {
          double v = 0;
          for (int64_t e = 0; e < d.dqk; ++e) v += scale * q[e] * C[e * d.dv + j];
          num[j] = w_inter * v;
        }
        for (int64_t z = 0; z <= l; ++z) {
          const double* k = x->k.data() + (g0 + j0 + z) * d.dqk;
          double dot = 0;
          for (int64_t e = 0; e < d.dqk; ++e) dot += q[e] * k[e];
          const double c = scale * dot * std::exp(log_d[z] - m);
          den += c;
          const double* v = x->v.data() + (g0 + j0 + z) * d.dv;
          for (int64_t j = 0; j < d.dv; ++j) num[j] += c * v[j];
        }
        const double divisor = std::max(std::fabs(den), std::exp(-m)) + d.eps;
        for (int64_t j = 0; j < d.dv; ++j) (*h)[(g0 + t) * d.dv + j] = num[j] / divisor;
      }
      // The state after the chunk.
      const double g = b[len - 1];
      double a_max = -std::numeric_limits<double>::infinity();
      for (int64_t l = 0; l < len; ++l) {
        score[l] = g - b[l] + x->i[g0 + j0 + l];  // a[s]
        a_max = std::max(a_max, score[l]);
      }
      const double m_next = std::max(g + M, a_max);
      const double decay = std::exp(g + M - m_next);
      for (int64_t e = 0; e < d.dqk * d.dv; ++e) C[e] *= decay;
      for (int64_t e = 0; e < d.dqk; ++e) N[e] *= decay;
      for (int64_t l = 0; l < len; ++l) {
        const double w = std::exp(score[l] - m_next);
        const double* k = x->k.data() + (g0 + j0 + l) * d.dqk;
        const double* v = x->v.data() + (g0 + j0 + l) * d.dv;
        for (int64_t e = 0; e < d.dqk; ++e) {
          for (int64_t j = 0; j < d.dv; ++j) C[e * d.dv + j] += w * k[e] * v[j];
          N[e] += w * k[e];
        }
      }
      M = m_next;
    }
  }
  return Status::ok();
}

Result<std::vector<OutputBound>> mlstm_chunkwise_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_mlstm_operands(problem, inputs, {});
  if (!x) return x.status();
  const auto& d = x->d;
  std::vector<OutputBound> bounds = mlstm_sequence_bounds(*x, d.chunk);
  // The last states: every token s reaches them with weight e^(c[S-1] - c[s] + i[s] - m_last),
  // through its exponent (delta), k_s (v_s) rounded to the dtype for the tensor-core product
  // k^T v, and the f32 sum over S tokens.
  const double eps = mlstm_dtype_eps(x->dtype);
  const double sum_error = 8 * std::sqrt(static_cast<double>(d.s)) * kU32;
  const int64_t last = d.s - 1;
  double c_atol = 0, n_atol = 0, m_atol = 0;
  std::vector<double> c_err(d.dqk * d.dv), n_err(d.dqk), gi(d.s);
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    const std::vector<double> c = mlstm_cumulative_gates(*x, r);
    std::copy(x->i.begin() + r * d.s, x->i.begin() + (r + 1) * d.s, gi.begin());
    double m = c[last];  // the zero state's term (m0 = 0)
    for (int64_t s = 0; s <= last; ++s) m = std::max(m, c[last] - c[s] + gi[s]);
    std::fill(c_err.begin(), c_err.end(), 0.0);
    std::fill(n_err.begin(), n_err.end(), 0.0);
    double m_err = 8 * kU32 * (std::fabs(c[last]) + std::fabs(m));
    for (int64_t s = 0; s <= last; ++s) {
      const double log_w = c[last] - c[s] + gi[s];
      const double delta = mlstm_log_gate_error(c, gi, d.s, last, s, m);
      if (log_w >= m - 2 * delta) m_err = std::max(m_err, m - log_w + delta);
      const double w = std::exp(log_w - m) * (delta + eps + sum_error);
      const double* k = x->k.data() + (r * d.s + s) * d.dqk;
      const double* v = x->v.data() + (r * d.s + s) * d.dv;
      for (int64_t e = 0; e < d.dqk; ++e) {
        for (int64_t j = 0; j < d.dv; ++j) c_err[e * d.dv + j] += w * std::fabs(k[e] * v[j]);
        n_err[e] += w * std::fabs(k[e]);
      }
    }
    for (double e : c_err) c_atol = std::max(c_atol, e);
    for (double e : n_err) n_atol = std::max(n_atol, e);
    m_atol = std::max(m_atol, m_err);
  }
  const double e32 = 2 * kU32;
  const OutputBound h = bounds[0];
  return std::vector<OutputBound>{h, OutputBound{e32, c_atol, 2, c_atol}, OutputBound{e32, n_atol, 2, n_atol},
                                  OutputBound{e32, m_atol, 2, m_atol}};
}

}  // namespace dnnb::reference
