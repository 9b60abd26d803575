// linear_bwd on OpenCL: the gradients of F.linear through the tiled GEMM (gemm.h), two products
// and a column sum, T = B M tokens (a 3-D x and dy read as rows of one matrix):
//   dx (T x K) = dy (T x N) w (N x K): w as it is stored,
//   dw (N x K) = dy^T (N x T) x (T x K): dy's view with its strides swapped,
//   db (N)     = the column sums of dy (bias=1; linear_bwd.cl): f32 sums over row slices, then
//                the slices in order.
#include <algorithm>

#include "kernels/opencl/gemm.h"
#include "kernels/opencl/linear_bwd_cl.h"
#include "kernels/opencl/program_dump.h"

namespace dnnb::opencl {
namespace {

// The view of a 2-D or 3-D operand as rows x cols, rows = B M: a 3-D batch stride must be M row
// strides (every layout the signature admits keeps that).
Result<MatrixView> token_rows(const Tensor& t, const char* name) {
  MatrixView v = matrix_view(t);
  if (t.ndim() == 3 && t.shape[0] > 1 && v.batch != t.shape[1] * v.row)
    return Status::unsupported(std::string("opencl linear_bwd: ") + name + " " + t.describe() +
                               " has batch items that are not one run of rows");
  v.batch = 0;
  return v;
}

// Row slices of db's column sums: enough work-items for a GPU (kDbItems) when the columns alone
// are fewer, each slice at least kDbMinRows rows. Fixed numbers (not the device's), so a problem
// sums in the same order on every device.
constexpr int64_t kDbItems = 64 * 1024, kDbMinRows = 64;
constexpr size_t kDbLocal = 64;

Status run_db(OpCall& call, const MatrixView& dy, int64_t rows, int64_t n, const Tensor& db) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const DType dtype = call.problem.dtype;
  if (db.dtype != dtype || dy.tensor->dtype != dtype)
    return Status::bad_input("opencl linear_bwd: dy and db must be of the problem dtype");
  const int64_t slices = std::max<int64_t>(1, std::min((kDbItems + n - 1) / n, (rows + kDbMinRows - 1) / kDbMinRows));
  const int64_t slice_rows = (rows + slices - 1) / slices;
  cl_mem partial = cl_buffer(db);  // unused with one slice
  if (slices > 1) {
    auto scratch = (*device)->scratch(static_cast<size_t>(slices * n) * sizeof(cl_float));
    if (!scratch) return scratch.status();
    partial = *scratch;
  }
  static const std::string source = program_source({opencl_source::linear_bwd});
  const std::string options = build_options(**device, dtype);
  auto kernel = opencl_kernel(**device, "linear_bwd", source, "linear_bwd_db", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(*dy.tensor)).add(cl_long{dy.tensor->offset}).add(cl_long{dy.row}).add(cl_long{dy.col});
  args.add(cl_long{rows}).add(cl_long{n}).add(cl_long{slice_rows}).add(partial);
  args.add(cl_buffer(db)).add(cl_long{db.offset}).add(cl_long{db.strides.at(0)});
  DNNB_TRY(args.status());
  const size_t columns = static_cast<size_t>((n + kDbLocal - 1) / kDbLocal) * kDbLocal;
  const size_t global[2] = {columns, static_cast<size_t>(slices)};
  const size_t local[2] = {kDbLocal, 1};
  DNNB_TRY(enqueue(**device, *kernel, 2, global, local, "linear_bwd/linear_bwd_db"));
  if (slices == 1) return Status::ok();
  auto finish = opencl_kernel(**device, "linear_bwd", source, "linear_bwd_db_finish", options);
  if (!finish) return finish.status();
  KernelArgs finish_args(*finish);
  finish_args.add(partial).add(cl_long{slices}).add(cl_long{n}).add(cl_buffer(db)).add(cl_long{db.offset});
  finish_args.add(cl_long{db.strides.at(0)});
  DNNB_TRY(finish_args.status());
  return enqueue(**device, *finish, 1, &columns, &kDbLocal, "linear_bwd/linear_bwd_db_finish");
}

Status run_linear_bwd(OpCall& call) {
  auto d = ops::linear_bwd_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 3 || call.outputs.size() != (d->bias ? 3u : 2u))
    return Status::bad_input(std::string("linear_bwd: expects inputs (x, w, dy) and outputs (dx, dw") +
                             (d->bias ? ", db)" : ")"));
  const int64_t rows = d->batch * d->m;
  auto x = token_rows(call.inputs[0], "x");
  if (!x) return x.status();
  auto dy = token_rows(call.inputs[2], "dy");
  if (!dy) return dy.status();
  auto dx = token_rows(call.outputs[0], "dx");
  if (!dx) return dx.status();
  const MatrixView w = matrix_view(call.inputs[1]);
  const MatrixView dw = matrix_view(call.outputs[1]);

  ops::GemmDesc gx;  // dx = dy w
  gx.m = rows;
  gx.n = d->k;
  gx.k = d->n;
  DNNB_TRY(run_gemm(call, gx, *dy, w, nullptr, *dx, "linear_bwd"));
  ops::GemmDesc gw;  // dw = dy^T x
  gw.m = d->n;
  gw.n = d->k;
  gw.k = rows;
  DNNB_TRY(run_gemm(call, gw, transposed(*dy), *x, nullptr, dw, "linear_bwd"));
  if (!d->bias) return Status::ok();
  return run_db(call, *dy, rows, d->n, call.outputs[2]);
}

bool register_linear_bwd() { return register_opencl("linear_bwd", float_dtypes(), run_linear_bwd); }

}  // namespace
DNNB_REGISTER(register_linear_bwd());
}  // namespace dnnb::opencl
