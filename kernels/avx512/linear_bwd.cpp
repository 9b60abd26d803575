// linear_bwd: the gradients of F.linear through the GEMM engine (gemm.h), two products and a
// column sum, T = B M tokens (a 3-D x and dy read as rows of one matrix):
//   dx (T x K) = dy (T x N) w (N x K): w read as it is stored,
//   dw (N x K) = dy^T (N x T) x (T x K): dy's view with its two strides swapped,
//   db (N)     = the column sums of dy (bias=1): f32, 16 columns a vector, four row chains.
// bf16 runs AMX tiles or VDPBF16PS as linear does (gemm.h: bf16_pairs); the variant fma
// converts bf16 to f32 instead.
#include <vector>

#include "kernels/avx512/avx512_common.h"
#include "kernels/avx512/gemm.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::avx512 {
namespace {

// The view of a 2-D or 3-D operand as rows x cols, rows = B M; a 3-D batch stride must be M row
// strides (every layout the signature admits keeps that).
Result<MatrixView> token_rows(const Tensor& t, const char* name) {
  MatrixView v = matrix_view(t);
  if (t.ndim() == 3 && t.shape[0] > 1 && v.batch_stride != t.shape[1] * v.row_stride)
    return Status::unsupported(std::string("avx512 linear_bwd: ") + name + " " + t.describe() +
                               " has batch items that are not one run of rows");
  v.batch_stride = 0;
  return v;
}

MatrixView swapped(MatrixView v) {
  std::swap(v.row_stride, v.col_stride);
  return v;
}

// db[c0 .. c0 + 16) (fewer at the tail): four f32 row chains, added at the end, rounded once.
template <class Fmt>
DNNB_AVX512 void column_block(const typename Fmt::storage* base, int64_t row_stride, int64_t rows, int64_t n,
                              int64_t c0, typename Fmt::storage* out) {
  const __mmask16 m = tail_mask(std::min<int64_t>(16, n - c0));
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    for (int i = 0; i < 4; ++i) acc[i] = _mm512_add_ps(acc[i], Fmt::load(base + (r + i) * row_stride + c0, m));
  for (; r < rows; ++r) acc[0] = _mm512_add_ps(acc[0], Fmt::load(base + r * row_stride + c0, m));
  Fmt::store(out + c0, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])), m);
}

// db[c] = sum over rows of dy[r, c], in f32, rounded once.
template <class Fmt>
void column_sums(const MatrixView& dy, int64_t rows, int64_t n, void* db, int64_t db_stride) {
  using S = typename Fmt::storage;
  const S* base = static_cast<const S*>(dy.data);
  auto* out = static_cast<S*>(db);
  if (dy.col_stride != 1 || db_stride != 1) {
    // Columns along the storage's rows (a transposed dy): one scalar f32 sum per column.
    parallel_tasks(n, rows * n, [&](int64_t c) {
      float s = 0.f;
      for (int64_t r = 0; r < rows; ++r) s += Fmt::to_float(base[r * dy.row_stride + c * dy.col_stride]);
      out[c * db_stride] = Fmt::from_float(s);
    });
    return;
  }
  parallel_tasks((n + 15) / 16, rows * n,
                 [&](int64_t b) { column_block<Fmt>(base, dy.row_stride, rows, n, b * 16, out); });
}

Status linear_bwd_supports(const Problem& p, const DeviceRuntime&) {
  auto d = ops::linear_bwd_desc(p);
  return d ? Status::ok() : d.status();
}

Status run_linear_bwd(OpCall& call, bool bf16_pairs) {
  auto d = ops::linear_bwd_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 3 || call.outputs.size() != (d->bias ? 3u : 2u))
    return Status::bad_input(std::string("avx512 linear_bwd: expected inputs x, w, dy and outputs dx, dw") +
                             (d->bias ? ", db" : ""));
  const int64_t rows = d->batch * d->m;
  for (const Tensor* t : {&call.inputs[0], &call.inputs[1], &call.inputs[2], &call.outputs[0], &call.outputs[1]})
    if (t->host_data() == nullptr) return Status::bad_input("avx512 linear_bwd: a tensor is not in host memory");
  auto x = token_rows(call.inputs[0], "x");
  if (!x) return x.status();
  auto dy = token_rows(call.inputs[2], "dy");
  if (!dy) return dy.status();
  auto dx = token_rows(call.outputs[0], "dx");
  if (!dx) return dx.status();
  const MatrixView w = matrix_view(call.inputs[1]);
  const MatrixView dw = matrix_view(call.outputs[1]);
  if (dx->col_stride != 1 || dw.col_stride != 1)
    return Status::unsupported("avx512 linear_bwd: dx and dw need unit-stride columns");

  GemmCall gx;  // dx = dy w
  gx.m = rows;
  gx.n = d->k;
  gx.k = d->n;
  gx.a = *dy;
  gx.b = w;
  gx.y = call.outputs[0].host_data();
  gx.y_dtype = call.outputs[0].dtype;
  gx.y_row_stride = dx->row_stride;
  gx.bf16_pairs = bf16_pairs;
  gx.amx = bf16_pairs;
  DNNB_TRY(gemm(gx));

  GemmCall gw = gx;  // dw = dy^T x
  gw.m = d->n;
  gw.n = d->k;
  gw.k = rows;
  gw.a = swapped(*dy);
  gw.b = *x;
  gw.y = call.outputs[1].host_data();
  gw.y_dtype = call.outputs[1].dtype;
  gw.y_row_stride = dw.row_stride;
  DNNB_TRY(gemm(gw));

  if (!d->bias) return Status::ok();
  Tensor& db = call.outputs[2];
  if (db.host_data() == nullptr) return Status::bad_input("avx512 linear_bwd: db is not in host memory");
  if (db.dtype != dy->dtype) return Status::bad_input("avx512 linear_bwd: db is not of dy's dtype");
  return with_format(dy->dtype, [&](auto fmt) {
    column_sums<decltype(fmt)>(*dy, rows, d->n, db.host_data(), db.strides.at(0));
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("linear_bwd", {DType::f32, DType::f16, DType::bf16}, linear_bwd_supports,
                              [](OpCall& call) { return run_linear_bwd(call, true); }, "", "", bf16_pairs_unit));
DNNB_REGISTER(register_kernel("linear_bwd", {DType::bf16}, linear_bwd_supports,
                              [](OpCall& call) { return run_linear_bwd(call, false); }, "fma", kBf16FmaWhen));

}  // namespace
}  // namespace dnnb::avx512
