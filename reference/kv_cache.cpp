// kv_cache in float64, one (sequence, query head) at a time: the token's k and v are stored
// into the caches first (store_cache_row), then the query reads every position 0..pos[b] of its
// kv head back from the cache (decoded exactly, e4m3 times its scale), its scores (capped with
// softcap=), softmax over the window's positions (window=: pos[b] - W + 1 .. pos[b]) and
// weighted sum of the values in float64.
#include "reference/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/host_device.h"
#include "reference/access.h"
#include "reference/sdpa.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb::reference {
namespace {

struct Operands {
  ops::KvCacheDesc d;
  std::vector<double> q, k, v;
  std::vector<int64_t> pos;
  Tensor k_cache, v_cache;
  float k_scale = 1, v_scale = 1;
};

Result<Operands> read_operands(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto d = ops::kv_cache_desc(problem);
  if (!d) return d.status();
  Operands x;
  x.d = *d;
  const size_t n = d->scaled() ? 8 : 6;
  if (inputs.size() != n)
    return Status::bad_input(problem.op + ": " + std::to_string(inputs.size()) + " inputs, the signature has " +
                             std::to_string(n));
  size_t i = 0;
  for (auto [dst, name] : {std::pair{&x.q, "q"}, {&x.k, "k"}, {&x.v, "v"}}) {
    auto t = dense_f64(inputs[i++], name);
    if (!t) return t.status();
    *dst = std::move(*t);
  }
  auto pos = dense_f64(inputs[i++], "pos");
  if (!pos) return pos.status();
  for (int64_t b = 0; b < d->batch; ++b) {
    const double p = (*pos)[b];
    if (!(p >= 0 && p < static_cast<double>(d->capacity)))
      return Status::bad_input(problem.op + ": pos[" + std::to_string(b) + "] = " + std::to_string(p) +
                               " is outside the cache's " + std::to_string(d->capacity) + " positions");
    x.pos.push_back(static_cast<int64_t>(p));
  }
  x.k_cache = inputs[i++];
  x.v_cache = inputs[i++];
  for (const Tensor* c : {&x.k_cache, &x.v_cache}) {
    if (c->dtype != d->cache || !c->is_contiguous() || !c->host_data())
      return Status::bad_input(problem.op + ": a cache is not a contiguous host tensor of dtype " + dtype_name(d->cache) +
                               " (" + c->describe() + ")");
  }
  if (d->scaled()) {
    for (auto [dst, name] : {std::pair{&x.k_scale, "k_scale"}, {&x.v_scale, "v_scale"}}) {
      auto t = dense_f64(inputs[i++], name);
      if (!t) return t.status();
      *dst = static_cast<float>((*t)[0]);
      if (!(*dst > 0) || !std::isfinite(*dst))
        return Status::bad_input(problem.op + ": " + name + " = " + std::to_string((*t)[0]) + " is not a positive number");
    }
  }
  return x;
}

// Row (b, g, p) of a cache, as an index into its [B, KV, C] rows.
int64_t cache_row(const ops::KvCacheDesc& d, int64_t b, int64_t g, int64_t p) {
  return (b * d.kv_heads + g) * d.capacity + p;
}

// Decodes cache row `row` into out (D values, exact).
void load_cache_row(const Tensor& cache, int64_t row, int64_t d, double scale, double* out) {
  const void* base = cache.host_data();
  for (int64_t e = 0; e < d; ++e) out[e] = load_element(base, cache.dtype, row * d + e) * scale;
}

// The token's row as the cache will hold it, decoded: stored into a one-row scratch cache.
Result<std::vector<double>> stored_token(const Tensor& like, const double* x, int64_t d, float scale) {
  auto scratch = empty_tensor(scratch_host(), like.dtype, {d});
  if (!scratch) return scratch.status();
  std::vector<float> xf(x, x + d);
  DNNB_TRY(store_cache_row(*scratch, 0, xf.data(), d, scale));
  std::vector<double> out(d);
  load_cache_row(*scratch, 0, d, like.dtype == DType::f8_e4m3fn ? scale : 1.0, out.data());
  return out;
}

// Calls fn(b, h, keys, values, n) for each (sequence, query head) with the n = pos[b] + 1
// decoded positions of its kv head (rows of D), the token at pos[b] as it is stored. `stored`:
// the caches already hold the token (the reference after its store); else it is quantised here.
template <class Fn>
Status for_each_query(const Operands& x, bool stored, Fn fn) {
  const auto& d = x.d;
  const double ks = d.scaled() ? x.k_scale : 1.0, vs = d.scaled() ? x.v_scale : 1.0;
  std::vector<double> keys, values;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.kv_heads; ++g) {
      const int64_t n = x.pos[b] + 1;
      keys.assign(n * d.d, 0.0);
      values.assign(n * d.d, 0.0);
      for (int64_t p = 0; p < n; ++p) {
        load_cache_row(x.k_cache, cache_row(d, b, g, p), d.d, ks, keys.data() + p * d.d);
        load_cache_row(x.v_cache, cache_row(d, b, g, p), d.d, vs, values.data() + p * d.d);
      }
      if (!stored) {
        const int64_t t = (b * d.kv_heads + g) * d.d;
        auto kt = stored_token(x.k_cache, x.k.data() + t, d.d, x.k_scale);
        auto vt = stored_token(x.v_cache, x.v.data() + t, d.d, x.v_scale);
        if (!kt) return kt.status();
        if (!vt) return vt.status();
        std::copy(kt->begin(), kt->end(), keys.begin() + (n - 1) * d.d);
        std::copy(vt->begin(), vt->end(), values.begin() + (n - 1) * d.d);
      }
      for (int64_t h = g * d.group(); h < (g + 1) * d.group(); ++h) fn(b, h, keys, values, n);
    }
  return Status::ok();
}

// Softmax probabilities of one query over keys lo..n-1 (p_j = 0 below lo: outside the window),
// the scores capped (c tanh(s / c)) where softcap is set, and sum_j p_j scale sum_e |q_e k_je|.
double probabilities(const ops::KvCacheDesc& d, const double* q, const std::vector<double>& keys, int64_t lo,
                     int64_t n, std::vector<double>& p) {
  p.assign(n, 0.0);
  std::vector<double> abs_dot(n);
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = lo; j < n; ++j) {
    double dot = 0, dot_abs = 0;
    for (int64_t e = 0; e < d.d; ++e) {
      dot += q[e] * keys[j * d.d + e];
      dot_abs += std::fabs(q[e] * keys[j * d.d + e]);
    }
    p[j] = d.scale * dot;
    if (d.softcap > 0) p[j] = d.softcap * std::tanh(p[j] / d.softcap);
    abs_dot[j] = d.scale * dot_abs;
    m = std::max(m, p[j]);
  }
  double l = 0;
  for (int64_t j = lo; j < n; ++j) l += (p[j] = std::exp(p[j] - m));
  double score_abs = 0;
  for (int64_t j = lo; j < n; ++j) score_abs += (p[j] /= l) * abs_dot[j];
  return score_abs;
}

}  // namespace

Status store_cache_row(Tensor& cache, int64_t row, const float* x, int64_t d, float scale) {
  auto* base = static_cast<unsigned char*>(cache.host_data());
  if (!base) return Status::bad_input("kv_cache: a cache without host memory (" + cache.describe() + ")");
  switch (cache.dtype) {
    case DType::q8_0:
      return quantize_row(DType::q8_0, x, d, base + storage_bytes(DType::q8_0, row * d));
    case DType::f8_e4m3fn:
      for (int64_t e = 0; e < d; ++e) base[row * d + e] = f32_to_f8_e4m3fn(x[e] / scale);
      return Status::ok();
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      for (int64_t e = 0; e < d; ++e) store_element(base, cache.dtype, row * d + e, x[e]);
      return Status::ok();
    default:
      return Status::bad_input(std::string("kv_cache: no cache of dtype ") + dtype_name(cache.dtype));
  }
}

Status kv_cache(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  auto x = read_operands(problem, inputs);
  if (!x) return x.status();
  const auto& d = x->d;
  if (outputs.size() != 1) return Status::bad_input("kv_cache: 1 output expected");
  auto o = f64_output(outputs[0], ops::kv_cache_q_shape(d), "o");
  if (!o) return o.status();
  std::vector<float> row(d.d);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.kv_heads; ++g) {
      const int64_t t = (b * d.kv_heads + g) * d.d;
      for (auto [cache, src, scale] : {std::tuple{&x->k_cache, &x->k, x->k_scale}, {&x->v_cache, &x->v, x->v_scale}}) {
        for (int64_t e = 0; e < d.d; ++e) row[e] = static_cast<float>((*src)[t + e]);
        DNNB_TRY(store_cache_row(*cache, cache_row(d, b, g, x->pos[b]), row.data(), d.d, scale));
      }
    }
  std::vector<double> p;
  return for_each_query(*x, true, [&](int64_t b, int64_t h, const std::vector<double>& keys,
                                      const std::vector<double>& values, int64_t n) {
    const int64_t r = b * d.heads + h;
    const int64_t lo = d.first(n - 1);
    probabilities(d, x->q.data() + r * d.d, keys, lo, n, p);
    double* out = *o + r * d.d;
    std::fill(out, out + d.d, 0.0);
    for (int64_t j = lo; j < n; ++j)
      for (int64_t e = 0; e < d.d; ++e) out[e] += p[j] * values[j * d.d + e];
  });
}

Result<std::vector<OutputBound>> kv_cache_bounds(const Problem& problem, const std::vector<Tensor>& inputs) {
  auto x = read_operands(problem, inputs);
  if (!x) return x.status();
  const auto& d = x->d;
  double score_abs = 0, o_mag = 0;
  int64_t longest = 1;
  std::vector<double> p, mag(d.d);
  DNNB_TRY(for_each_query(*x, false, [&](int64_t b, int64_t h, const std::vector<double>& keys,
                                         const std::vector<double>& values, int64_t n) {
    const int64_t lo = d.first(n - 1);
    score_abs = std::max(score_abs, probabilities(d, x->q.data() + (b * d.heads + h) * d.d, keys, lo, n, p));
    longest = std::max(longest, n - lo);
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int64_t j = lo; j < n; ++j)
      for (int64_t e = 0; e < d.d; ++e) mag[e] += p[j] * std::fabs(values[j * d.d + e]);
    for (double m : mag) o_mag = std::max(o_mag, m);
  }));
  return std::vector<OutputBound>{attention_output_bound(d.dtype, d.d, longest, d.softcap, score_abs, o_mag)};
}

}  // namespace dnnb::reference
