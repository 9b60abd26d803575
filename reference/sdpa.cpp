// Attention in float64, one query row at a time: scores, softcap, the visibility rule and the
// additive mask, the softmax, then the products. The backward follows autograd's chain through
// the same steps. The bounds come from magnitude sums of the same intermediates.
#include "reference/sdpa.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/access.h"
#include "suites/ops/sdpa_desc.h"

namespace dnnb::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kU32 = 0x1p-24;  // f32 unit roundoff: accumulations and scores

struct Operands {
  ops::SdpaDesc d;
  std::vector<double> q, k, v, mask, o, dout;
  DType dtype = DType::f32;
};

Result<Operands> read_operands(const Problem& problem, const std::vector<Tensor>& inputs, bool backward) {
  Operands x;
  auto d = ops::sdpa_desc(problem);
  if (!d) return d.status();
  x.d = *d;
  x.dtype = problem.dtype;
  const size_t n = 3 + (d->mask ? 1 : 0) + (backward ? 3 : 0);
  if (inputs.size() != n)
    return Status::bad_input(problem.op + ": " + std::to_string(inputs.size()) + " inputs, the signature has " + std::to_string(n));
  size_t i = 0;
  for (auto [dst, name] : {std::pair{&x.q, "q"}, {&x.k, "k"}, {&x.v, "v"}}) {
    auto t = dense_f64(inputs[i++], name);
    if (!t) return t.status();
    *dst = std::move(*t);
  }
  if (d->mask) {
    auto t = dense_f64(inputs[i++], "mask");
    if (!t) return t.status();
    x.mask = std::move(*t);
  }
  if (backward) {
    auto o = dense_f64(inputs[i++], "o");
    auto dout = dense_f64(inputs[i++], "do");
    if (!o) return o.status();
    if (!dout) return dout.status();
    x.o = std::move(*o);
    x.dout = std::move(*dout);
  }
  return x;
}

// One query row of one head: the probabilities p (0 where not visible), the softcap's
// derivative per key, the logsumexp, and the magnitude of the scores' sums.
struct Row {
  std::vector<double> p, dcap;
  double lse = -kInf;
  double score_abs = 0;  // sum_j p_j * scale * sum_d |q_d k_jd|
};

void row_probs(const Operands& x, int64_t b, int64_t h, int64_t i, Row& row) {
  const auto& d = x.d;
  const int64_t kvh = h / d.group();
  const double* q = x.q.data() + ((b * d.heads + h) * d.sq + i) * d.d;
  const double* kbase = x.k.data() + (b * d.kv_heads + kvh) * d.sk * d.d;
  row.p.assign(d.sk, 0.0);
  row.dcap.assign(d.sk, 1.0);
  std::vector<double> s(d.sk, -kInf), s_abs(d.sk, 0.0);
  double m = -kInf;
  for (int64_t j = 0; j < d.sk; ++j) {
    if (!d.visible(i, j)) continue;
    const double* k = kbase + j * d.d;
    double dot = 0, dot_abs = 0;
    for (int64_t e = 0; e < d.d; ++e) {
      dot += q[e] * k[e];
      dot_abs += std::fabs(q[e] * k[e]);
    }
    double v = d.scale * dot;
    if (d.softcap > 0) {
      const double t = std::tanh(v / d.softcap);
      v = d.softcap * t;
      row.dcap[j] = 1 - t * t;
    }
    if (d.mask) v += x.mask[i * d.sk + j];
    s[j] = v;
    s_abs[j] = d.scale * dot_abs;
    m = std::max(m, v);
  }
  row.score_abs = 0;
  if (m == -kInf) {
    row.lse = -kInf;
    return;
  }
  double l = 0;
  for (int64_t j = 0; j < d.sk; ++j) {
    row.p[j] = s[j] == -kInf ? 0.0 : std::exp(s[j] - m);
    l += row.p[j];
  }
  for (int64_t j = 0; j < d.sk; ++j) {
    row.p[j] /= l;
    row.score_abs += row.p[j] * s_abs[j];
  }
  row.lse = m + std::log(l);
}

// Calls fn(r, kv_off, row) for every query row of every head, with its probabilities: r indexes
// the row in [B, H, Sq], kv_off the first key of its kv head in [B, KV, Sk].
template <class Fn>
void for_each_row(const Operands& x, Fn fn) {
  const auto& d = x.d;
  Row row;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      const int64_t kv_off = (b * d.kv_heads + h / d.group()) * d.sk;
      for (int64_t i = 0; i < d.sq; ++i) {
        row_probs(x, b, h, i, row);
        fn((b * d.heads + h) * d.sq + i, kv_off, row);
      }
    }
}

double unit_roundoff(DType t) { return t == DType::f16 ? 0x1p-11 : t == DType::bf16 ? 0x1p-8 : kU32; }

// How far a score may be off in f32: its sum over D, the softcap's tanh, the lse read back.
double score_error(int64_t head_dim, double softcap, double score_abs, double lse_abs) {
  return 8 * std::sqrt(static_cast<double>(head_dim)) * kU32 * score_abs + 4 * kU32 * (softcap + lse_abs);
}

}  // namespace

Status sdpa(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_operands(problem, inputs, false);
  if (!x) return x.status();
  const auto& d = x->d;
  if (outputs.size() != 2) return Status::bad_input("sdpa: 2 outputs expected");
  auto o = f64_output(outputs[0], ops::sdpa_o_shape(d), "o");
  auto lse = f64_output(outputs[1], ops::sdpa_lse_shape(d), "lse");
  if (!o) return o.status();
  if (!lse) return lse.status();
  for_each_row(*x, [&](int64_t r, int64_t kv_off, const Row& row) {
    const double* vbase = x->v.data() + kv_off * d.dv;
    (*lse)[r] = row.lse;
    double* out = *o + r * d.dv;
    std::fill(out, out + d.dv, 0.0);
    for (int64_t j = 0; j < d.sk; ++j) {
      if (row.p[j] == 0) continue;
      for (int64_t e = 0; e < d.dv; ++e) out[e] += row.p[j] * vbase[j * d.dv + e];
    }
  });
  return Status::ok();
}

Status sdpa_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_operands(problem, inputs, true);
  if (!x) return x.status();
  const auto& d = x->d;
  if (outputs.size() != 3) return Status::bad_input("sdpa_bwd: 3 outputs expected");
  auto dq = f64_output(outputs[0], ops::sdpa_q_shape(d), "dq");
  auto dk = f64_output(outputs[1], ops::sdpa_k_shape(d), "dk");
  auto dv = f64_output(outputs[2], ops::sdpa_v_shape(d), "dv");
  if (!dq) return dq.status();
  if (!dk) return dk.status();
  if (!dv) return dv.status();
  std::fill(*dq, *dq + shape_numel(ops::sdpa_q_shape(d)), 0.0);
  std::fill(*dk, *dk + shape_numel(ops::sdpa_k_shape(d)), 0.0);
  std::fill(*dv, *dv + shape_numel(ops::sdpa_v_shape(d)), 0.0);
  std::vector<double> ds(d.sk);
  for_each_row(*x, [&](int64_t r, int64_t kv_off, const Row& row) {
    const double* kbase = x->k.data() + kv_off * d.d;
    const double* vbase = x->v.data() + kv_off * d.dv;
    const double* q = x->q.data() + r * d.d;
    const double* g = x->dout.data() + r * d.dv;
    // dP_j = do . v_j; the softmax's backward: dS_j = p_j (dP_j - sum_l p_l dP_l).
    double dot_pdp = 0;
    for (int64_t j = 0; j < d.sk; ++j) {
      double dp = 0;
      if (row.p[j] != 0)
        for (int64_t e = 0; e < d.dv; ++e) dp += g[e] * vbase[j * d.dv + e];
      ds[j] = dp;
      dot_pdp += row.p[j] * dp;
    }
    for (int64_t j = 0; j < d.sk; ++j) {
      if (row.p[j] == 0) continue;
      const double dsj = row.p[j] * (ds[j] - dot_pdp) * row.dcap[j] * d.scale;
      for (int64_t e = 0; e < d.d; ++e) {
        (*dq)[r * d.d + e] += dsj * kbase[j * d.d + e];
        (*dk)[(kv_off + j) * d.d + e] += dsj * q[e];
      }
      for (int64_t e = 0; e < d.dv; ++e) (*dv)[(kv_off + j) * d.dv + e] += row.p[j] * g[e];
    }
  });
  return Status::ok();
}

OutputBound attention_output_bound(DType dtype, int64_t head_dim, int64_t keys, double softcap, double score_abs,
                                   double o_mag) {
  const double eps = 2 * unit_roundoff(dtype);
  const double delta = score_error(head_dim, softcap, score_abs, 0);
  const double sum_error = 8 * std::sqrt(static_cast<double>(keys)) * kU32;
  const double factor = softcap > 0 ? 3 : 2;
  return OutputBound{eps, (2 * eps + sum_error + 2 * delta) * o_mag, factor, eps * o_mag};
}

Result<std::vector<OutputBound>> sdpa_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_operands(problem, inputs, false);
  if (!x) return x.status();
  const auto& d = x->d;
  double o_mag = 0, score_abs = 0, lse_abs = 0;
  std::vector<double> mag(d.dv);
  for_each_row(*x, [&](int64_t, int64_t kv_off, const Row& row) {
    const double* vbase = x->v.data() + kv_off * d.dv;
    score_abs = std::max(score_abs, row.score_abs);
    if (std::isfinite(row.lse)) lse_abs = std::max(lse_abs, std::fabs(row.lse));
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int64_t j = 0; j < d.sk; ++j)
      if (row.p[j] != 0)
        for (int64_t e = 0; e < d.dv; ++e) mag[e] += row.p[j] * std::fabs(vbase[j * d.dv + e]);
    for (double m : mag) o_mag = std::max(o_mag, m);
  });
  const double delta = score_error(d.d, d.softcap, score_abs, 0);
  const double sum_error = 8 * std::sqrt(static_cast<double>(d.sk)) * kU32;
  const double factor = d.softcap > 0 ? 3 : 2;
  OutputBound o = attention_output_bound(x->dtype, d.d, d.sk, d.softcap, score_abs, o_mag);
  OutputBound lse{2 * kU32, sum_error + delta, factor, 2 * kU32 * lse_abs};
  return std::vector<OutputBound>{o, lse};
}

Result<std::vector<OutputBound>> sdpa_bwd_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_operands(problem, inputs, true);
  if (!x) return x.status();
  const auto& d = x->d;
  const double eps = 2 * unit_roundoff(x->dtype);
  double score_abs = 0, lse_abs = 0;
  std::vector<double> dq_mag(shape_numel(ops::sdpa_q_shape(d)), 0.0), dk_mag(shape_numel(ops::sdpa_k_shape(d)), 0.0),
      dv_mag(shape_numel(ops::sdpa_v_shape(d)), 0.0);
  for_each_row(*x, [&](int64_t r, int64_t kv_off, const Row& row) {
    const double* kbase = x->k.data() + kv_off * d.d;
    const double* vbase = x->v.data() + kv_off * d.dv;
    score_abs = std::max(score_abs, row.score_abs);
    if (std::isfinite(row.lse)) lse_abs = std::max(lse_abs, std::fabs(row.lse));
    const double* q = x->q.data() + r * d.d;
    const double* g = x->dout.data() + r * d.dv;
    const double* o = x->o.data() + r * d.dv;
    double d_abs = 0;  // sum |do||o|: the kernel's D_i = do . o, with o as stored
    for (int64_t e = 0; e < d.dv; ++e) d_abs += std::fabs(g[e] * o[e]);
    for (int64_t j = 0; j < d.sk; ++j) {
      if (row.p[j] == 0) continue;
      double a = 0;
      for (int64_t e = 0; e < d.dv; ++e) a += std::fabs(g[e] * vbase[j * d.dv + e]);
      const double w = row.p[j] * (a + d_abs) * row.dcap[j] * d.scale;
      for (int64_t e = 0; e < d.d; ++e) {
        dq_mag[r * d.d + e] += w * std::fabs(kbase[j * d.d + e]);
        dk_mag[(kv_off + j) * d.d + e] += w * std::fabs(q[e]);
      }
      for (int64_t e = 0; e < d.dv; ++e) dv_mag[(kv_off + j) * d.dv + e] += row.p[j] * std::fabs(g[e]);
    }
  });
  const double delta = score_error(d.d, d.softcap, score_abs, lse_abs);
  const double factor = d.softcap > 0 ? 3 : 2;
  auto bound = [&](const std::vector<double>& mag, int64_t length) {
    const double m = mag.empty() ? 0 : *std::max_element(mag.begin(), mag.end());
    const double sum_error = 8 * std::sqrt(static_cast<double>(length)) * kU32;
    return OutputBound{eps, (2 * eps + sum_error + 2 * delta) * m, factor, eps * m};
  };
  const int64_t rows_per_key = d.sq * d.group();
  return std::vector<OutputBound>{bound(dq_mag, d.sk), bound(dk_mag, rows_per_key), bound(dv_mag, rows_per_key)};
}

}  // namespace dnnb::reference
