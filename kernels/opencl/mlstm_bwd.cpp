// mlstm_bwd on OpenCL (mlstm_bwd.cl): the gate pre-pass mlstm_gates (mlstm_body.cl) into device
// scratch, then dq per block of query rows over the keys (mlstm_bwd_rows, which also leaves each
// row's den, drs, dm and dm_n in scratch), dk, dv and di per block of keys over the queries
// (mlstm_bwd_cols), and df by a reverse cumulative sum per head (mlstm_bwd_df): no atomics, each
// output written once, in this order on the in-order queue. Every operand is read through its
// strides. Tiles and build options: mlstm_launch.h.
#include "kernels/opencl/mlstm_bwd_cl.h"
#include "kernels/opencl/mlstm_launch.h"

namespace dnnb::opencl {
namespace {

// Local bytes of mlstm_bwd_rows at SDPA_BQ x SDPA_BK: q, dh, k and v tiles, four weight tiles,
// the keys' a.
size_t rows_local_bytes(const ops::MlstmDesc& d, const SdpaTiles& t) {
  const int64_t kw = t.width4(d.dqk), vw = t.width4(d.dv);
  return static_cast<size_t>(16 * (t.rows + t.walk) * (kw + vw) + 16 * t.rows * t.walk + 8 * t.walk);
}

// Local bytes of mlstm_bwd_cols at SDPA_BN x SDPA_BM: k, v, q and dh tiles, two weight tiles, the
// query rows' scalars (28 bytes each), the lanes' di.
size_t cols_local_bytes(const ops::MlstmDesc& d, const SdpaTiles& t) {
  const int64_t kw = t.width4(d.dqk), vw = t.width4(d.dv);
  return static_cast<size_t>(16 * (t.rows + t.walk) * (kw + vw) + 8 * t.rows * t.walk + 28 * t.walk +
                             4 * t.rows * t.lanes);
}

Status run_mlstm_bwd(OpCall& call) {
  auto run = mlstm_run(call);
  if (!run) return run.status();
  OpenCLDevice& device = *run->device;
  const ops::MlstmDesc& d = run->d;
  const DType dtype = run->dtype;
  std::vector<MlstmOperand> in = mlstm_sequence_inputs(d, dtype);
  in.push_back({"dh", ops::mlstm_v_shape(d), dtype});
  in.push_back({"n", ops::mlstm_gate_shape(d), DType::f32});
  in.push_back({"m", ops::mlstm_gate_shape(d), DType::f32});
  DNNB_TRY(check_mlstm_call(call, in,
                            {{"dq", ops::mlstm_qk_shape(d), dtype},
                             {"dk", ops::mlstm_qk_shape(d), dtype},
                             {"dv", ops::mlstm_v_shape(d), dtype},
                             {"di", ops::mlstm_gate_shape(d), DType::f32},
                             {"df", ops::mlstm_gate_shape(d), DType::f32}}));
  const Tensor& q = call.inputs[0];
  const Tensor& k = call.inputs[1];
  const Tensor& v = call.inputs[2];
  const Tensor& f = call.inputs[4];
  const Tensor& dh = call.inputs[5];
  const Tensor& n = call.inputs[6];
  const Tensor& dq = call.outputs[0];
  const Tensor& dk = call.outputs[1];
  const Tensor& dv = call.outputs[2];
  const Tensor& di = call.outputs[3];
  const Tensor& df = call.outputs[4];
  auto row_tiles =
      mlstm_tiles(device, d, [&](const SdpaTiles& t) { return rows_local_bytes(d, t); }, "mlstm_bwd");
  if (!row_tiles) return row_tiles.status();
  auto col_tiles =
      mlstm_tiles(device, d, [&](const SdpaTiles& t) { return cols_local_bytes(d, t); }, "mlstm_bwd");
  if (!col_tiles) return col_tiles.status();
  static const std::string source = mlstm_source(opencl_source::mlstm_bwd);
  const std::string options = mlstm_options(
      device, dtype, d, row_tiles->lanes,
      "-DSDPA_BQ=" + std::to_string(row_tiles->rows) + " -DSDPA_BK=" + std::to_string(row_tiles->walk) +
          " -DSDPA_BN=" + std::to_string(col_tiles->rows) + " -DSDPA_BM=" + std::to_string(col_tiles->walk));
  auto rows_kernel = opencl_kernel(device, "mlstm_bwd", source, "mlstm_bwd_rows", options);
  if (!rows_kernel) return rows_kernel.status();
  auto cols_kernel = opencl_kernel(device, "mlstm_bwd", source, "mlstm_bwd_cols", options);
  if (!cols_kernel) return cols_kernel.status();
  auto df_kernel = opencl_kernel(device, "mlstm_bwd", source, "mlstm_bwd_df", options);
  if (!df_kernel) return df_kernel.status();

  // Scratch: the gates' arrays, then each row's (den, drs, dm, dm_n) as float4 from the first
  // float4 boundary past them (rows_at; the kernels take the one buffer and that offset).
  const size_t gates_bytes = mlstm_gates_bytes(d);
  const size_t rows_at = (gates_bytes + 15) / 16;  // in float4
  const size_t positions = static_cast<size_t>(d.batch * d.heads * d.s);
  auto scratch = run_mlstm_gates(device, call, d, "mlstm_bwd", source, options, 16 * (rows_at + positions), false);
  if (!scratch) return scratch.status();
  const cl_long rows_offset = static_cast<cl_long>(rows_at);
  const ClMlstmDims dims = mlstm_dims(d);
  const cl_float scale = static_cast<cl_float>(d.scale());

  KernelArgs rows_args(*rows_kernel);
  for (const Tensor* t : {&q, &k, &v, &dh, &n}) add_mlstm_operand(rows_args, *t);
  rows_args.add(*scratch).add(rows_offset);
  add_mlstm_operand(rows_args, dq).add(dims).add(scale).add(static_cast<cl_float>(d.eps));
  DNNB_TRY(rows_args.status());
  DNNB_TRY(launch_sdpa_tiles(device, *rows_kernel, d.batch * d.heads * sdpa_ceil_div(d.s, row_tiles->rows),
                             *row_tiles, "mlstm_bwd/mlstm_bwd_rows"));

  KernelArgs cols_args(*cols_kernel);
  for (const Tensor* t : {&q, &k, &v, &dh}) add_mlstm_operand(cols_args, *t);
  cols_args.add(*scratch).add(rows_offset);
  for (const Tensor* t : {&dk, &dv, &di}) add_mlstm_operand(cols_args, *t);
  cols_args.add(dims).add(scale);
  DNNB_TRY(cols_args.status());
  DNNB_TRY(launch_sdpa_tiles(device, *cols_kernel, d.batch * d.heads * sdpa_ceil_div(d.s, col_tiles->rows),
                             *col_tiles, "mlstm_bwd/mlstm_bwd_cols"));

  KernelArgs df_args(*df_kernel);
  add_mlstm_operand(df_args, f).add(*scratch).add(rows_offset);
  add_mlstm_operand(add_mlstm_operand(df_args, di), df).add(dims);
  DNNB_TRY(df_args.status());
  return launch_flat(device, *df_kernel, d.batch * d.heads, "mlstm_bwd/mlstm_bwd_df", 1);
}

bool register_mlstm_bwd() { return register_opencl("mlstm_bwd", float_dtypes(), run_mlstm_bwd); }

}  // namespace
DNNB_REGISTER(register_mlstm_bwd());
}  // namespace dnnb::opencl
