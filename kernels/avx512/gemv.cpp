// gemv: y[b] = w @ x[b] for B = 1..16 vectors, bound by reading w once from memory.
// x is converted once to a dense f32 block (B x K, zero-padded to a multiple of 16, a few
// hundred KiB at most: it stays in cache). w is streamed: each task takes a block of 64 rows,
// and for each 4 of them runs the vectors through in groups of up to 4, keeping the 4 x 4
// sums in 16 zmm accumulators (f32) while the 4 rows, read from memory by the first group,
// are read from L1/L2 by the next. A w whose rows are not unit-stride (a transposed view)
// goes to the GEMM engine as x @ w^T instead, which packs it.
#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/gemm.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::avx512 {
namespace {

constexpr int kRows = 4;           // rows of w per step
constexpr int kVectors = 4;        // vectors of x per step
constexpr int64_t kTaskRows = 64;  // rows of w per task

// Sums of rows [0, rows) of w (rows <= kRows, row stride ws) times vectors [0, nv) of xf
// (nv <= kVectors, row stride kp, zero past K), to out[v * kRows + r].
template <class Fmt, int NV>
DNNB_AVX512 void gemv_block(const typename Fmt::storage* w, int64_t ws, int rows, const float* xf, int64_t kp,
                            int64_t K, float* out) {
  __m512 acc[kRows][NV];
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  const typename Fmt::storage* row[kRows];
  for (int r = 0; r < kRows; ++r) row[r] = w + std::min(r, rows - 1) * ws;  // rows past the end repeat the last
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 wv[kRows];
    for (int r = 0; r < kRows; ++r) wv[r] = Fmt::load(row[r] + k);
    for (int v = 0; v < NV; ++v) {
      const __m512 xv = _mm512_load_ps(xf + v * kp + k);
      for (int r = 0; r < kRows; ++r) acc[r][v] = _mm512_fmadd_ps(wv[r], xv, acc[r][v]);
    }
  }
  if (k < K) {
    const __mmask16 m = tail_mask(K - k);
    __m512 wv[kRows];
    for (int r = 0; r < kRows; ++r) wv[r] = Fmt::load(row[r] + k, m);
    for (int v = 0; v < NV; ++v) {
      const __m512 xv = _mm512_load_ps(xf + v * kp + k);
      for (int r = 0; r < kRows; ++r) acc[r][v] = _mm512_fmadd_ps(wv[r], xv, acc[r][v]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int v = 0; v < NV; ++v) out[v * kRows + r] = _mm512_reduce_add_ps(acc[r][v]);
}

// x (B x K, any strides) as dense f32 rows of kp values, zero past K.
template <class Fmt>
DNNB_AVX512 void convert_x(const Tensor& x, int64_t B, int64_t K, int64_t kp, float* xf) {
  using T = typename Fmt::storage;
  const T* base = static_cast<const T*>(x.host_data());
  const int64_t rs = x.strides[0], cs = x.strides[1];
  for (int64_t b = 0; b < B; ++b) {
    float* dst = xf + b * kp;
    const T* src = base + b * rs;
    int64_t k = 0;
    if (cs == 1)
      for (; k < K; k += 16) _mm512_store_ps(dst + k, Fmt::load(src + k, tail_mask(std::min<int64_t>(16, K - k))));
    for (; k < K; ++k) dst[k] = Fmt::to_float(src[k * cs]);
    for (k = K; k < kp; ++k) dst[k] = 0.0f;
  }
}

template <class Fmt>
Status run_gemv_rows(OpCall& call, const ops::GemmDesc& d) {
  using T = typename Fmt::storage;
  const Tensor& w = call.inputs.at(0);
  const Tensor& x = call.inputs.at(1);
  Tensor& y = call.outputs.at(0);
  const int64_t N = d.n, K = d.k, B = d.m;
  const int64_t kp = (K + 15) / 16 * 16;
  std::vector<float> x_store(static_cast<size_t>(B * kp + 16));
  float* xf = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(x_store.data()) + 63) & ~uintptr_t{63});
  convert_x<Fmt>(x, B, K, kp, xf);
  const T* wp = static_cast<const T*>(w.host_data());
  void* yp = y.host_data();
  if (wp == nullptr || yp == nullptr) return Status::bad_input("avx512 gemv: a tensor is not in host memory");
  const int64_t ws = w.strides[0], ys = y.strides[0];
  const DType y_dtype = y.dtype;
  parallel_tasks((N + kTaskRows - 1) / kTaskRows, N * K, [&](int64_t task) {
    const int64_t n1 = std::min(N, (task + 1) * kTaskRows);
    float sums[kVectors * kRows];
    for (int64_t n = task * kTaskRows; n < n1; n += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, n1 - n));
      for (int64_t b = 0; b < B; b += kVectors) {
        const int nv = static_cast<int>(std::min<int64_t>(kVectors, B - b));
        const float* xb = xf + b * kp;
        switch (nv) {
          case 1: gemv_block<Fmt, 1>(wp + n * ws, ws, rows, xb, kp, K, sums); break;
          case 2: gemv_block<Fmt, 2>(wp + n * ws, ws, rows, xb, kp, K, sums); break;
          case 3: gemv_block<Fmt, 3>(wp + n * ws, ws, rows, xb, kp, K, sums); break;
          default: gemv_block<Fmt, 4>(wp + n * ws, ws, rows, xb, kp, K, sums);
        }
        for (int v = 0; v < nv; ++v)
          for (int r = 0; r < rows; ++r) store_rounded(yp, y_dtype, (b + v) * ys + n + r, sums[v * kRows + r]);
      }
    }
  });
  return Status::ok();
}

Status gemv_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::gemv_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_gemv(OpCall& call) {
  auto d = ops::gemv_desc(call.problem);
  if (!d) return d.status();
  const Tensor& w = call.inputs.at(0);
  Tensor& y = call.outputs.at(0);
  if (y.strides.back() != 1) return Status::unsupported("avx512 gemv: y's columns are not unit-stride");
  if (w.strides[1] != 1 && d->k > 1) {
    GemmCall g;
    g.m = d->m;
    g.n = d->n;
    g.k = d->k;
    g.a = matrix_view(call.inputs.at(1));
    g.b = matrix_view(w, /*transposed=*/true);
    g.y = y.host_data();
    g.y_dtype = y.dtype;
    g.y_row_stride = y.strides[0];
    return gemm(g);
  }
  return with_format(call.problem.dtype, [&](auto fmt) { return run_gemv_rows<decltype(fmt)>(call, *d); });
}

DNNB_REGISTER(register_kernel("gemv", {DType::f32, DType::f16, DType::bf16}, gemv_supports, run_gemv));

}  // namespace
}  // namespace dnnb::avx512
