// Host side of the row reductions: reduce_chunks (DNNB_REDUCE_DEPTH 4 for f32; f16/bf16 8 with raw
// loads in work-groups of 128, the "raw128" plan; variant "deep": 8) when x has unit column stride
// and rows long enough for a work-group, else reduce_rows; variant "legacy" is always reduce_rows.
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

// depth: chunks in flight per work-item in reduce_chunks (4 or 8); 0: reduce_rows only.
// raw: reduce_chunks with DNNB_ROW_RAW=1 (the loads of a step issued before any conversion);
// wg: its work-group size.
// keys16: f16/bf16 take max16_keys (same depth and wg) where it applies.
Status run_reduce(OpCall& call, const std::string& program_name, const std::string& source, int depth,
                  bool raw = false, size_t wg = kRowWorkGroup, bool keys16 = false) {
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
  if (depth > 0) {
    auto done = try_reduce_chunks(call, **device, program_name, source, *xr, *yr, depth, raw, wg);
    if (!done) return done.status();
    if (*done) return Status::ok();
  }
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
  // "": f32 at depth 4; f16/bf16 as "raw128" (H200, 2026-11-21, session 4: sum bf16 at 16384 x
  // 8192 63 us against 93 at depth 4, 102% of copy against 69%; raw128 checked on NVIDIA's
  // OpenCL for every op and dtype, 252 cases; f16 and max/mean/norm2 not timed yet, same loads).
  // Except max: raw128 measured 311 us for f16 and bf16 at 16384 x 8192 on the H200 (20% of copy,
  // session 5, every other reduction at 97-104%), where depth 4 measured 125 us in session 3, so
  // max's 16-bit rows stay at depth 4 until the cause is found.
  // max's 16-bit rows: max16_keys at the raw128 geometry (promoted from "keys128" after the H200,
  // 2026-11-21, session 6: f16 and bf16 at 16384 x 8192 in 62.7 us, 100% of copy, against 122.6
  // and 124.0 us at depth 4; checked there). Ops without keys16_source: as before.
  const std::string keys = keys16_source != nullptr
                               ? program_source({op_source, opencl_source::row_body, opencl_source::reduce_body,
                                                 keys16_source})
                               : std::string();
  const bool raw128_16bit = op != "max";
  const auto run_default = [op, source, keys, raw128_16bit](OpCall& call) {
    if (call.problem.dtype == DType::f32) return run_reduce(call, op, source, 4);
    if (!keys.empty()) return run_reduce(call, op, keys, 8, true, 128, true);
    return raw128_16bit ? run_reduce(call, op, source, 8, true, 128) : run_reduce(call, op, source, 4);
  };
  bool ok = register_opencl(op, float_dtypes(), run_default) &&
         // "d4": depth 4 for every dtype, each chunk converted right after its load (the 16-bit
         // default until session 4).
         register_opencl(op, "d4", float_dtypes(),
                         [op, source](OpCall& call) { return run_reduce(call, op, source, 4); }) &&
         register_opencl(op, "legacy", float_dtypes(),
                         [op, source](OpCall& call) { return run_reduce(call, op, source, 0); }) &&
         // "deep": 8 chunks (128 bytes) in flight per work-item, for the 16-bit rows (51-66% of
         // copy at depth 4 on the H200; f32 is at 100% already).
         register_opencl(op, "deep", float_dtypes(),
                         [op, source](OpCall& call) { return run_reduce(call, op, source, 8); }) &&
         // "raw": depth 4, the step's four 16-byte loads issued back to back as storage bits and
         // converted after (the 16-bit default converts each chunk inside its bounds branch, so
         // each load waits for the previous one: 51-66% of copy where f32 reaches 100%).
         register_opencl(op, "raw", float_dtypes(),
                         [op, source](OpCall& call) { return run_reduce(call, op, source, 4, true); }) &&
         // "raw128": 128 items per row, 8 chunks per step, raw: a 16-bit row of 8192 columns is
         // one step of 128 bytes in flight per item (at 256 x 4 a row's 16 KB is also one step,
         // but then every row pays its reduction for half the bytes of an f32 row's two steps).
         register_opencl(op, "raw128", float_dtypes(),
                         [op, source](OpCall& call) { return run_reduce(call, op, source, 8, true, 128); });
  if (!keys.empty()) {
    // max's "keys" (256 items, 4 chunks per step; the 16-bit default takes 128 items and 8 chunks,
    // the raw128 geometry), f16/bf16 only: max16_keys compares the 16-bit values as integers
    // (max16.cl says why); shapes it does not take run the default's kernels.
    ok = register_opencl(op, "keys", {DType::f16, DType::bf16},
                         [op, keys](OpCall& call) {
                           return run_reduce(call, op, keys, 4, false, kRowWorkGroup, true);
                         }) &&
         ok;
  }
  return ok;
}

}  // namespace dnnb::opencl
