// Host side of the row reductions: reduce_chunks when x has unit column stride and rows long
// enough for a work-group, else reduce_rows; f16/bf16 max takes max16_keys first.
#include "kernels/opencl/reduce.h"

#include "kernels/opencl/reduce_body_cl.h"
#include "kernels/opencl/row_body_cl.h"

namespace dnnb::opencl {
namespace {

// reduce_chunks, or false when the problem is not one it takes.
Result<bool> try_reduce_chunks(OpCall& call, OpenCLDevice& device, const std::string& program_name,
                               const std::string& source, const ClRows& xr, const ClRows& yr, int depth,
                               bool raw, size_t wg) {
  const DType dtype = call.problem.dtype;
  if (!row_fills_work_group(dtype, xr.cols, wg) || xr.col_stride != 1 || xr.cols >= kRowMaxCols) return false;
  RowPlan plan;
  plan.raw = raw;
  plan.wg = wg;
  auto kernel = row_cached_kernel(device, program_name, source, "reduce_chunks", dtype, 1, {xr}, plan,
                                  " -DDNNB_REDUCE_DEPTH=" + std::to_string(depth));
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(xr).add(cl_buffer(call.outputs[0])).add(yr);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, xr.rows, program_name + "/reduce_chunks", wg));
  return true;
}

// max16_keys (max16.cl, f16/bf16 max), or false when the problem is not one it takes: x with unit
// column stride and uniform rows (at most one outer dim), y likewise, rows long enough for `wg`.
Result<bool> try_max16_keys(OpCall& call, OpenCLDevice& device, const std::string& program_name,
                            const std::string& source, const ClRows& xr, const ClRows& yr, int depth, size_t wg) {
  const DType dtype = call.problem.dtype;
  if (dtype == DType::f32 || !row_fills_work_group(dtype, xr.cols, wg) || xr.col_stride != 1 ||
      xr.cols >= kRowMaxCols || xr.outer_dims > 1 || yr.outer_dims > 1)
    return false;
  RowPlan plan;
  plan.raw = true;  // -DDNNB_ROW_EXACT=1 when a row is exactly one step (`depth` chunks per item)
  plan.wg = wg;
  auto kernel = row_cached_kernel(device, program_name, source, "max16_keys", dtype, depth, {xr}, plan,
                                  " -DDNNB_REDUCE_DEPTH=" + std::to_string(depth));
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  const cl_long x_rs = xr.outer_dims == 1 ? xr.stride[0] : 0;
  const cl_long y_rs = yr.outer_dims == 1 ? yr.stride[0] : 0;
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(xr.offset).add(x_rs);
  args.add(cl_buffer(call.outputs[0])).add(yr.offset).add(y_rs).add(xr.rows).add(static_cast<cl_int>(xr.cols));
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, xr.rows, program_name + "/max16_keys", wg));
  return true;
}

// depth: chunks in flight per work-item in reduce_chunks (4 or 8). raw: reduce_chunks with
// DNNB_ROW_RAW=1 (the loads of a step issued before any conversion); wg: its work-group size.
// keys16: f16/bf16 take max16_keys (same depth and wg) where it applies.
Status run_reduce(OpCall& call, const std::string& program_name, const std::string& source, int depth, bool raw,
                  size_t wg, bool keys16) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input(program_name + ": expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.ndim() == 0) return Status::bad_input(program_name + ": x must have at least one dim");
  Shape reduced(x.shape.begin(), x.shape.end() - 1);
  if (y.shape != reduced)
    return Status::bad_input(program_name + ": y " + y.describe() + " is not x " + x.describe() +
                             " without its last dim");
  if (y.numel() == 0) return Status::ok();
  if (x.shape.back() == 0) return Status::unsupported(program_name + ": reduction over an empty dim");
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto yr = cl_rows(with_unit_last_dim(y));
  if (!yr) return yr.status();
  if (keys16) {
    auto done = try_max16_keys(call, **device, program_name, source, *xr, *yr, depth, wg);
    if (!done) return done.status();
    if (*done) return Status::ok();
  }
  auto done = try_reduce_chunks(call, **device, program_name, source, *xr, *yr, depth, raw, wg);
  if (!done) return done.status();
  if (*done) return Status::ok();
  auto kernel =
      opencl_kernel(**device, program_name, source, "reduce_rows", row_options(**device, call.problem.dtype, 1, false));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, program_name + "/reduce_rows");
}

}  // namespace

bool register_reduce(const std::string& op, const char* op_source, const char* keys16_source) {
  std::string source = program_source({op_source, opencl_source::row_body, opencl_source::reduce_body});
  // max16.cl after the reduction's own parts: max16_keys (f16/bf16 max on the storage bits).
  const std::string keys = keys16_source != nullptr
                               ? program_source({op_source, opencl_source::row_body, opencl_source::reduce_body,
                                                 keys16_source})
                               : std::string();
  // f32: 256 items per row, 4 chunks (64 bytes) in flight per item. f16/bf16: 128 items, 8 chunks
  // loaded as storage bits before any is converted: a row of 8192 columns is one step of 128 bytes
  // per item (docs/opencl.md, "Reductions").
  return register_opencl(op, float_dtypes(), [op, source, keys](OpCall& call) {
    if (call.problem.dtype == DType::f32) return run_reduce(call, op, source, 4, false, kRowWorkGroup, false);
    if (!keys.empty()) return run_reduce(call, op, keys, 8, true, 128, true);
    return run_reduce(call, op, source, 8, true, 128, false);
  });
}

}  // namespace dnnb::opencl
