// The backward of the mLSTM's parallel form in float64, as torch autograd computes it through
// mlstm_kernels 2.0.6 torch/parallel/native/fw.py for an upstream gradient dh of h (n and m get
// none), one query row t at a time:
//   dC = dh v^T, dv += C^T dh, dC~ = dC / (n + eps), dn = -sum_s dC C~ / (n + eps)^2,
//   n = max(|r|, e^-m), r = sum_s C~: dr = dn sign(r) where |r| > e^-m, else dm = -e^-m dn,
//   dC~ += dr, dS = dC~ D (dq, dk through S = scale q k^T), dLogD = dC~ S D, dm -= sum_s dLogD,
//   and m = max_s LogD routes dm to LogD[t, s*] (torch.max's index: the first maximum);
//   LogD[t,s] = c[t] - c[s] + i[s]: di[s] += dLogD, dc[t] += sum_s dLogD, dc[s] -= dLogD;
//   c = cumsum(logsigmoid(f)): df[r] = sigmoid(-f[r]) sum_{t >= r} dc[t].
// Since h depends on m only through eps (docs/ops-family5.md), the m path's total is
// -sum_e dh h eps / (n + eps): a kernel that holds m constant differs from autograd by that,
// which the bounds allow (docs/numerics.md, "mLSTM").
#include <algorithm>
#include <cmath>

#include "reference/access.h"
#include "reference/mlstm.h"

namespace dnnb::reference {
namespace {

constexpr double kU32 = 0x1p-24;

// One head's gradients, with (when `mag` is set) the magnitude sums the bounds need.
struct HeadGrads {
  std::vector<double> dq, dk, dv, di, df;
};
struct HeadMags {
  std::vector<double> dq, dk, dv, di, df;
  // The m path (the part a kernel holding m constant leaves out): its total |P_t| per head and
  // per token s the rows whose argmax s is.
  std::vector<double> path_di;
  double path_total = 0;
};

void head_backward(const MlstmOperands& x, int64_t r, const double* dh, HeadGrads& g, HeadMags* mag) {
  const auto& d = x.d;
  const double scale = d.scale();
  const int64_t S = d.s, g0 = r * S;
  g.dq.assign(S * d.dqk, 0.0);
  g.dk.assign(S * d.dqk, 0.0);
  g.dv.assign(S * d.dv, 0.0);
  g.di.assign(S, 0.0);
  std::vector<double> dc(S, 0.0), dc_mag(S, 0.0);
  if (mag) {
    mag->dq.assign(S * d.dqk, 0.0);
    mag->dk.assign(S * d.dqk, 0.0);
    mag->dv.assign(S * d.dv, 0.0);
    mag->di.assign(S, 0.0);
    mag->path_di.assign(S, 0.0);
    mag->path_total = 0;
  }
  // di and df are formed from f32 quantities only (products of inputs, the gates' exponents,
  // sums): their error per pair is the exponent's delta and the f32 sums' and scores' errors.
  std::vector<double> c, gi;
  if (mag) {
    c = mlstm_cumulative_gates(x, r);
    gi.assign(x.i.begin() + g0, x.i.begin() + g0 + S);
  }
  const double sums = 8 * std::sqrt(static_cast<double>(S)) * kU32;
  const double score_error = 8 * std::sqrt(static_cast<double>(d.dqk)) * kU32;
  MlstmRow row;
  std::vector<double> dct(S), dct_mag(S), h(d.dv);
  for (int64_t t = 0; t < S; ++t) {
    mlstm_row(x, r, t, row);
    const double* g_t = dh + (g0 + t) * d.dv;
    const double* q = x.q.data() + (g0 + t) * d.dqk;
    std::fill(h.begin(), h.end(), 0.0);
    double dn = 0, dn_mag = 0;
    for (int64_t s = 0; s <= t; ++s) {
      const double* v = x.v.data() + (g0 + s) * d.dv;
      double dcs = 0, dcs_abs = 0;
      for (int64_t e = 0; e < d.dv; ++e) {
        dcs += g_t[e] * v[e];
        dcs_abs += std::fabs(g_t[e] * v[e]);
        h[e] += row.ctilde[s] * v[e] / row.divisor;
        g.dv[s * d.dv + e] += row.ctilde[s] / row.divisor * g_t[e];
        if (mag) mag->dv[s * d.dv + e] += std::fabs(row.ctilde[s] / row.divisor * g_t[e]);
      }
      dct[s] = dcs / row.divisor;
      dct_mag[s] = dcs_abs / row.divisor;
      dn -= dcs * row.ctilde[s] / (row.divisor * row.divisor);
      dn_mag += dcs_abs * std::fabs(row.ctilde[s]) / (row.divisor * row.divisor);
    }
    // n = max(|r|, e^-m): torch.maximum sends the gradient to the larger (half each on a tie).
    const double a = std::fabs(row.rowsum), e_m = std::exp(-row.m);
    const double to_r = a > e_m ? 1.0 : a < e_m ? 0.0 : 0.5;
    const double dr = dn * to_r * (row.rowsum > 0 ? 1.0 : row.rowsum < 0 ? -1.0 : 0.0);
    double dm = -e_m * dn * (1 - to_r);
    int64_t argmax = 0;
    for (int64_t s = 0; s <= t; ++s)
      if (row.log_d[s] > row.log_d[argmax]) argmax = s;
    std::vector<double> dlog(t + 1), dlog_mag(t + 1), delta(t + 1, 0.0);
    double delta_row = 0;
    if (mag)
      for (int64_t s = 0; s <= t; ++s)
        if (row.dgate[s] > 1e-30) delta_row = std::max(delta_row, delta[s] = mlstm_log_gate_error(c, gi, S, t, s, row.m));
    // The error of dr = dn sign(r): dn sums over the row in f32, of terms off by their exponents.
    const double dr_error = (8 * std::sqrt(static_cast<double>(t + 1)) * kU32 + 2 * delta_row + 4 * kU32) * dn_mag;
    for (int64_t s = 0; s <= t; ++s) {
      const double dct_s = dct[s] + dr;
      const double ds = dct_s * row.dgate[s];
      const double ds_mag = (dct_mag[s] + dn_mag) * row.dgate[s];
      dlog[s] = dct_s * row.score[s] * row.dgate[s];
      if (mag) {
        // dLogD = (dC~ + dr) S D: each factor's error times the others' values, and the f32 sums
        // (di over t, dc over the row and column) of the terms.
        const double val = std::fabs(dct_s);
        const double dct_error = 8 * std::sqrt(static_cast<double>(d.dv)) * kU32 * dct_mag[s] + dr_error;
        dlog_mag[s] = row.dgate[s] * (std::fabs(row.score[s]) * (val * (2 * delta[s] + 4 * kU32) + dct_error) +
                                      val * score_error * row.score_abs[s]) +
                      sums * std::fabs(dlog[s]);
      }
      dm -= dlog[s];
      const double* k = x.k.data() + (g0 + s) * d.dqk;
      for (int64_t e = 0; e < d.dqk; ++e) {
        g.dq[t * d.dqk + e] += scale * ds * k[e];
        g.dk[s * d.dqk + e] += scale * ds * q[e];
        if (mag) {
          mag->dq[t * d.dqk + e] += scale * ds_mag * std::fabs(k[e]);
          mag->dk[s * d.dqk + e] += scale * ds_mag * std::fabs(q[e]);
        }
      }
    }
    dlog[argmax] += dm;
    if (mag) {
      // Autograd's m path totals P_t = -sum_e dh h eps / (n + eps) (h depends on m only
      // through eps): a kernel holding m constant leaves it out.
      double path = 0;
      for (int64_t e = 0; e < d.dv; ++e) path += g_t[e] * h[e];
      path = std::fabs(path) * d.eps / row.divisor;
      mag->path_di[argmax] += path;
      mag->path_total += path;
    }
    for (int64_t s = 0; s <= t; ++s) {
      g.di[s] += dlog[s];
      dc[t] += dlog[s];
      dc[s] -= dlog[s];
      if (mag) {
        mag->di[s] += dlog_mag[s];
        dc_mag[t] += dlog_mag[s];
        dc_mag[s] += dlog_mag[s];
      }
    }
  }
  // c = cumsum(logsigmoid(f)): the reverse cumulative sum, times d logsigmoid = sigmoid(-f).
  g.df.assign(S, 0.0);
  if (mag) mag->df.assign(S, 0.0);
  double acc = 0, acc_mag = 0;
  for (int64_t s = S - 1; s >= 0; --s) {
    acc += dc[s];
    acc_mag += dc_mag[s] + 8 * std::sqrt(static_cast<double>(S)) * kU32 * std::fabs(acc);
    const double sig = 1 / (1 + std::exp(x.f[g0 + s]));
    g.df[s] = acc * sig;
    if (mag) mag->df[s] = acc_mag * sig;
  }
}

}  // namespace

Status mlstm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_mlstm_operands(problem, inputs, {"dh", "n", "m"});
  if (!x) return x.status();
  const auto& d = x->d;
  DNNB_TRY(expect_arity(inputs, 8, outputs, 5, problem.op));
  auto dq = f64_output(outputs[0], ops::mlstm_qk_shape(d), "dq");
  auto dk = f64_output(outputs[1], ops::mlstm_qk_shape(d), "dk");
  auto dv = f64_output(outputs[2], ops::mlstm_v_shape(d), "dv");
  auto di = f64_output(outputs[3], ops::mlstm_gate_shape(d), "di");
  auto df = f64_output(outputs[4], ops::mlstm_gate_shape(d), "df");
  for (auto* t : {&dq, &dk, &dv, &di, &df})
    if (!*t) return t->status();
  const double* dh = x->extra.data();  // dh, then n and m (the kernels' inputs; the golden recomputes them)
  HeadGrads g;
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    head_backward(*x, r, dh, g, nullptr);
    std::copy(g.dq.begin(), g.dq.end(), *dq + r * d.s * d.dqk);
    std::copy(g.dk.begin(), g.dk.end(), *dk + r * d.s * d.dqk);
    std::copy(g.dv.begin(), g.dv.end(), *dv + r * d.s * d.dv);
    std::copy(g.di.begin(), g.di.end(), *di + r * d.s);
    std::copy(g.df.begin(), g.df.end(), *df + r * d.s);
  }
  return Status::ok();
}

Result<std::vector<OutputBound>> mlstm_bwd_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_mlstm_operands(problem, inputs, {"dh", "n", "m"});
  if (!x) return x.status();
  const auto& d = x->d;
  const double eps = mlstm_dtype_eps(x->dtype);
  // dq, dk and dv sum up to S products whose operands a kernel rounds to the dtype for the
  // tensor cores (2 eps: dS or C~ rounded, and the output's rounding), in f32 (8 sqrt(S) u), of
  // terms off by their exponent's error (the largest delta of a pair with D > 1e-30) and the f32
  // sums over DQK and DV; relative to the terms' magnitude sums. di and df carry per-pair error
  // sums (head_backward) and the m path.
  double delta_max = 0;
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    const std::vector<double> c = mlstm_cumulative_gates(*x, r);
    std::vector<double> gi(x->i.begin() + r * d.s, x->i.begin() + (r + 1) * d.s);
    MlstmRow row;
    for (int64_t t = 0; t < d.s; ++t) {
      mlstm_row(*x, r, t, row);
      for (int64_t s = 0; s <= t; ++s)
        if (row.dgate[s] > 1e-30) delta_max = std::max(delta_max, mlstm_log_gate_error(c, gi, d.s, t, s, row.m));
    }
  }
  const double rel = 2 * eps + 8 * std::sqrt(static_cast<double>(d.s)) * kU32 +
                     8 * (std::sqrt(static_cast<double>(d.dqk)) + std::sqrt(static_cast<double>(d.dv))) * kU32 +
                     2 * delta_max + 4 * kU32;
  double m_dq = 0, m_dk = 0, m_dv = 0, m_di = 0, m_df = 0, path_di = 0, path_df = 0;
  HeadGrads g;
  HeadMags mag;
  const double* dh = x->extra.data();
  for (int64_t r = 0; r < d.batch * d.heads; ++r) {
    head_backward(*x, r, dh, g, &mag);
    for (double v : mag.dq) m_dq = std::max(m_dq, v);
    for (double v : mag.dk) m_dk = std::max(m_dk, v);
    for (double v : mag.dv) m_dv = std::max(m_dv, v);
    for (double v : mag.di) m_di = std::max(m_di, v);
    for (double v : mag.df) m_df = std::max(m_df, v);
    for (double v : mag.path_di) path_di = std::max(path_di, v);
    path_df = std::max(path_df, mag.path_total);
  }
  auto bound = [&](double m) { return OutputBound{eps, rel * m, 2, eps * m}; };
  // The m path reaches di at each row's argmax and df through the cumulative sum (sigmoid <= 1).
  const double e32 = 2 * kU32;
  return std::vector<OutputBound>{bound(m_dq), bound(m_dk), bound(m_dv), OutputBound{e32, m_di + path_di, 2, m_di + path_di},
                                  OutputBound{e32, m_df + path_df, 2, m_df + path_df}};
}

}  // namespace dnnb::reference
