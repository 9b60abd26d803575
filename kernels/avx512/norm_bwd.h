// The backward of layernorm (centered: x - mean, and db) and rmsnorm (weight offset 1 for the
// Gemma form) on AVX-512: one kernel for both, registered by layernorm_bwd.cpp and
// rmsnorm_bwd.cpp. From the forward's saved statistics (mean, rstd: f32 per row), per row:
//   pass 1: the row sums of g = dy (w + offset) and of g xhat, xhat = (x - mean) rstd;
//   pass 2: dx = rstd ((g - xhat mean(g xhat)) - mean(g)), and dy xhat, dy added into the
//           task's column sums (f32).
// The row's x, dy and w are read from memory in pass 1 and from L1/L2 in pass 2, which also
// prefetches the thread's next row of x and dy into L2 (write_prefetching) and writes dx with
// non-temporal stores past the last-level cache (stream_rows), as the forward's write pass. Rows go to
// tasks in contiguous blocks, one block of rows per thread, each with its own f32 column sums;
// the tasks' sums are then added in task order and rounded once to dw and db. The task count
// depends only on the rows and the thread count, so a rerun on one machine gives the same bits.
#pragma once
#include <cmath>
#include <vector>

#include "kernels/avx512/row_reduce.h"

namespace dnnb::avx512 {

struct NormBwdRow {
  float mean = 0, rstd = 1, weight_offset = 0;
  bool centered = true;
  float mean_g = 0, mean_gx = 0;  // set by norm_bwd_means
};

// xhat, g = dy (w + offset) and dy of columns [i, i + 16) under mask m (masked-off lanes load 0:
// their dy is 0, so they add nothing to any sum).
template <class Fmt>
DNNB_AVX512_INLINE void norm_bwd_terms(const typename Fmt::storage* x, const typename Fmt::storage* dy,
                                       const typename Fmt::storage* w, int64_t i, __mmask16 m, const NormBwdRow& s,
                                       __m512& xhat, __m512& g, __m512& d) {
  xhat = _mm512_mul_ps(_mm512_sub_ps(Fmt::load(x + i, m), _mm512_set1_ps(s.mean)), _mm512_set1_ps(s.rstd));
  d = Fmt::load(dy + i, m);
  g = _mm512_mul_ps(d, _mm512_add_ps(Fmt::load(w + i, m), _mm512_set1_ps(s.weight_offset)));
}

// Pass 1: s.mean_g (0 for rmsnorm) and s.mean_gx over the row's n columns.
template <class Fmt>
DNNB_AVX512 void norm_bwd_means(const typename Fmt::storage* x, const typename Fmt::storage* dy,
                                const typename Fmt::storage* w, int64_t n, NormBwdRow& s) {
  __m512 sum_g[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()}, sum_gx[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 2; ++k) {
      __m512 xhat, g, d;
      norm_bwd_terms<Fmt>(x, dy, w, i + 16 * k, 0xffff, s, xhat, g, d);
      sum_g[k] = _mm512_add_ps(sum_g[k], g);
      sum_gx[k] = _mm512_fmadd_ps(g, xhat, sum_gx[k]);
    }
  }
  for (; i < n; i += 16) {
    __m512 xhat, g, d;
    norm_bwd_terms<Fmt>(x, dy, w, i, tail_mask(std::min<int64_t>(16, n - i)), s, xhat, g, d);
    sum_g[0] = _mm512_add_ps(sum_g[0], g);
    sum_gx[0] = _mm512_fmadd_ps(g, xhat, sum_gx[0]);
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  s.mean_g = s.centered ? _mm512_reduce_add_ps(_mm512_add_ps(sum_g[0], sum_g[1])) * inv_n : 0.0f;
  s.mean_gx = _mm512_reduce_add_ps(_mm512_add_ps(sum_gx[0], sum_gx[1])) * inv_n;
}

// Pass 2 over columns [0, n) of a piece of the row: dx (non-temporal stores when `stream`), and
// dy xhat, dy added into the column sums.
template <class Fmt>
DNNB_AVX512 void norm_bwd_write(const typename Fmt::storage* x, const typename Fmt::storage* dy,
                                const typename Fmt::storage* w, int64_t n, const NormBwdRow& s,
                                typename Fmt::storage* dx, float* dw_sum, float* db_sum, bool stream) {
  const __m512 mean_g = _mm512_set1_ps(s.mean_g), mean_gx = _mm512_set1_ps(s.mean_gx), rstd = _mm512_set1_ps(s.rstd);
  write_span_values<Fmt>(dx, n, stream, [&](int64_t i, __mmask16 m) DNNB_AVX512_LAMBDA {
    __m512 xhat, g, d;
    norm_bwd_terms<Fmt>(x, dy, w, i, m, s, xhat, g, d);
    _mm512_mask_storeu_ps(dw_sum + i, m, _mm512_fmadd_ps(d, xhat, _mm512_maskz_loadu_ps(m, dw_sum + i)));
    if (db_sum) _mm512_mask_storeu_ps(db_sum + i, m, _mm512_add_ps(d, _mm512_maskz_loadu_ps(m, db_sum + i)));
    // (g - xhat mean(g xhat)) - mean(g): g enters only as an FMA's addend, so it is the rounded
    // product of pass 1 and a one-column row gives g - mean(g) = 0 exactly (a contracted
    // d (w + offset) - mean(g) would leave the product's rounding error, times rstd).
    return _mm512_mul_ps(_mm512_sub_ps(_mm512_fnmadd_ps(xhat, mean_gx, g), mean_g), rstd);
  });
}

// dst[c] = round(sum over tasks of parts[t * n + c]), tasks added in order.
template <class Fmt>
DNNB_AVX512 void norm_bwd_columns(const float* parts, int64_t tasks, int64_t n, typename Fmt::storage* dst) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(std::min<int64_t>(16, n - i));
    __m512 total = _mm512_maskz_loadu_ps(m, parts + i);
    for (int64_t t = 1; t < tasks; ++t) total = _mm512_add_ps(total, _mm512_maskz_loadu_ps(m, parts + t * n + i));
    Fmt::store(dst + i, total, m);
  }
}

// inputs x, w, dy, [mean,] rstd; outputs dx, dw, [db] (docs/ops-family1.md).
template <class Fmt>
Status run_norm_bwd(OpCall& call, bool centered) {
  using T = typename Fmt::storage;
  const std::string form = call.problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input(call.problem.op + ": form=" + form + " is not torch or gemma");
  const size_t n_inputs = centered ? 5 : 4, n_outputs = centered ? 3 : 2;
  if (call.inputs.size() != n_inputs || call.outputs.size() != n_outputs)
    return Status::bad_input(call.problem.op + ": expected " + std::to_string(n_inputs) + " inputs and " +
                             std::to_string(n_outputs) + " outputs");
  auto x = host_rows(call.inputs[0]);
  if (!x) return x.status();
  auto dy = host_rows(call.inputs[2]);
  if (!dy) return dy.status();
  auto dx = host_rows(call.outputs[0]);
  if (!dx) return dx.status();
  auto rstd = host_rows(call.inputs[n_inputs - 1]);
  if (!rstd) return rstd.status();
  auto mean = centered ? host_rows(call.inputs[3]) : rstd;  // rmsnorm has none: rstd stands in
  if (!mean) return mean.status();
  std::vector<T> w_copy;
  auto w = contiguous_vector<T>(call.inputs[1], w_copy);
  if (!w) return w.status();
  const int64_t rows = x->rows(), cols = x->cols();
  if (dy->rows() != rows || dy->cols() != cols || dx->rows() != rows || dx->cols() != cols || rstd->rows() != rows ||
      mean->rows() != rows)
    return Status::bad_input(call.problem.op + ": dy, dx and the statistics must match x's rows");
  const int64_t per_task = std::max<int64_t>(1, (rows + max_threads() - 1) / max_threads());
  const int64_t tasks = (rows + per_task - 1) / per_task;
  const int64_t sums = centered ? 2 : 1;
  std::vector<float> parts(static_cast<size_t>(tasks * sums * cols), 0.0f);
  float* dw_parts = parts.data();
  float* db_parts = centered ? parts.data() + tasks * cols : nullptr;
  const float weight_offset = form == "gemma" ? 1.0f : 0.0f;
  const bool stream = stream_rows(*dx, 2 * tensor_bytes(call.inputs[0]));
  parallel_tasks(tasks, rows * cols, [&](int64_t t) {
    const int64_t end = std::min(rows, (t + 1) * per_task);
    for (int64_t r = t * per_task; r < end; ++r) {
      NormBwdRow s;
      s.centered = centered;
      s.weight_offset = weight_offset;
      s.rstd = *rstd->row<const float>(r);
      s.mean = centered ? *mean->row<const float>(r) : 0.0f;
      const T* xs = read_span<T>(*x, r, 0, cols, 0);
      const T* dys = read_span<T>(*dy, r, 0, cols, 1);
      norm_bwd_means<Fmt>(xs, dys, *w, cols, s);
      T* out = write_span<T>(*dx, r, 0, cols, 2);
      float* dw_sum = dw_parts + t * cols;
      float* db_sum = db_parts ? db_parts + t * cols : nullptr;
      // The task's next row of x and dy is prefetched into L2 piece by piece during pass 2.
      write_prefetching(cols, r + 1 < end ? next_row_of(*x, r, &*dy) : NextRow{}, [&](int64_t c, int64_t k) {
        norm_bwd_write<Fmt>(xs + c, dys + c, *w + c, k, s, out + c, dw_sum + c, db_sum ? db_sum + c : nullptr, stream);
      });
      commit_span(*dx, r, 0, cols, out);
    }
  });
  for (int64_t k = 0; k < sums; ++k) {
    auto out = host_elements(call.outputs[1 + k]);
    if (!out) return out.status();
    if (out->rows() != cols) return Status::bad_input(call.problem.op + ": dw and db must have x's columns");
    std::vector<T> dense;
    const bool unit = call.outputs[1 + k].ndim() == 1 && call.outputs[1 + k].strides[0] == 1;
    if (!unit) dense.resize(static_cast<size_t>(cols));
    T* dst = unit ? out->row<T>(0) : dense.data();
    norm_bwd_columns<Fmt>(parts.data() + k * tasks * cols, tasks, cols, dst);
    if (!unit)
      for (int64_t c = 0; c < cols; ++c) *out->row<T>(c) = dense[c];
  }
  return Status::ok();
}

}  // namespace dnnb::avx512
