// cuBLAS linear_bwd: the gradients of F.linear as cublasGemmEx calls, T = B M tokens (a 3-D x
// and dy read as rows of one matrix):
//   dx (T x K) = dy (T x N) w (N x K),
//   dw (N x K) = dy^T (N x T) x (T x K) (dy with its strides swapped: cuBLAS's op T),
//   db (N x 1) = dy^T (N x T) ones (T x 1) (bias=1): the column sum as a third product (cuBLAS
//                has no reduction), each sum in f32 and rounded once, as the GEMMs are.
#include "kernels/peers/cublas/cublas_common.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cublas_peer {
namespace {

// The row and column strides of a 2-D or 3-D operand read as rows x cols, rows = B M.
Result<std::pair<int64_t, int64_t>> token_rows(const Tensor& t, const char* name) {
  const int n = t.ndim();
  const int64_t row = t.strides[n - 2], col = t.strides[n - 1];
  if (n == 3 && t.shape[0] > 1 && t.strides[0] != t.shape[1] * row)
    return Status::unsupported(std::string("cublas linear_bwd: ") + name + " " + t.describe() +
                               " has batch items that are not one run of rows");
  return std::make_pair(row, col);
}

Status run_linear_bwd(OpCall& call) {
  auto device = device_of(call);
  if (!device) return device.status();
  auto d = ops::linear_bwd_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 3 || call.outputs.size() != (d->bias ? 3u : 2u))
    return Status::bad_input(std::string("cublas linear_bwd: expected inputs x, w, dy and outputs dx, dw") +
                             (d->bias ? ", db" : ""));
  const DType in = call.problem.dtype;
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& dy = call.inputs[2];
  const int64_t rows = d->batch * d->m, n = d->n, k = d->k;
  for (const Tensor* t : {&x, &w, &dy})
    if (t->dtype != in) return Status::bad_input("cublas linear_bwd: x, w and dy must be the problem dtype");
  if (x.numel() != rows * k || dy.numel() != rows * n || w.shape != Shape{n, k})
    return Status::bad_input("cublas linear_bwd: operands " + x.describe() + ", " + w.describe() + ", " +
                             dy.describe() + " do not match " + call.problem.to_string());
  auto sx = token_rows(x, "x");
  if (!sx) return sx.status();
  auto sdy = token_rows(dy, "dy");
  if (!sdy) return sdy.status();
  const Tensor& dx = call.outputs[0];
  const Tensor& dw = call.outputs[1];
  DNNB_TRY(expect_output(dx, in));
  DNNB_TRY(expect_output(dw, in));
  if (dx.dtype != in || dw.dtype != in) return Status::bad_input("cublas linear_bwd: dx and dw are of the problem dtype");
  auto sdx = token_rows(dx, "dx");
  if (!sdx) return sdx.status();

  Product px;  // dx = dy w
  px.in_dtype = px.out_dtype = in;
  px.m = rows;
  px.n = k;
  px.k = n;
  px.a = data_of(dy);
  px.a_m = sdy->first;
  px.a_k = sdy->second;
  px.b = data_of(w);
  px.b_k = w.strides[0];
  px.b_n = w.strides[1];
  px.y = data_of(dx);
  px.y_m = sdx->first;
  DNNB_TRY(run_product(**device, call, px));

  Product pw = px;  // dw = dy^T x
  pw.m = n;
  pw.n = k;
  pw.k = rows;
  pw.a_m = sdy->second;
  pw.a_k = sdy->first;
  pw.b = data_of(x);
  pw.b_k = sx->first;
  pw.b_n = sx->second;
  pw.y = data_of(dw);
  pw.y_m = dw.strides[0];
  DNNB_TRY(run_product(**device, call, pw));
  if (!d->bias) return Status::ok();

  const Tensor& db = call.outputs[2];
  DNNB_TRY(expect_output(db, in));
  if (db.dtype != in || db.shape != Shape{n})
    return Status::bad_input("cublas linear_bwd: db " + db.describe() + " is not [" + std::to_string(n) + "] " +
                             dtype_name(in));
  auto column = ones(**device, in, rows);
  if (!column) return column.status();
  Product pb = pw;  // db (N x 1) = dy^T ones
  pb.n = 1;
  pb.b = *column;
  pb.b_k = 1;
  pb.b_n = 1;
  pb.y = data_of(db);
  pb.y_m = db.strides[0];
  return run_product(**device, call, pb);
}

DNNB_REGISTER(register_op("linear_bwd", "bf16_tensor", run_linear_bwd));

}  // namespace
}  // namespace dnnb::cublas_peer
