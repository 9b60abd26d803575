#include "kernels/opencl/elementwise.h"

#include "kernels/opencl/binary_body_cl.h"
#include "kernels/opencl/row_body_cl.h"
#include "kernels/opencl/unary_body_cl.h"

namespace dnnb::opencl {
namespace {

// A contiguous run of elements starting `offset` elements into its buffer, as rows_chunk_aligned
// wants it.
ClRows flat_rows(int64_t offset) {
  ClRows r;
  r.offset = offset;
  return r;
}

// A view that binary_2d addresses as off + r * rs + c * cs (cs 0 or 1): at most one outer
// dim; false otherwise.
bool two_d(const ClRows& v, cl_long* row_stride) {
  if (v.outer_dims > 1 || (v.col_stride != 0 && v.col_stride != 1)) return false;
  *row_stride = v.outer_dims == 1 ? v.stride[0] : 0;
  return true;
}

// The views binary_2d and binary_tile take: a, b and y 2-D (row strides into *_rs), y with unit
// column stride and fewer than kRowMaxCols columns; false otherwise. *aligned: every operand read
// in chunks (column stride 1) is chunk-aligned.
struct Binary2dViews {
  cl_long a_rs = 0, b_rs = 0, y_rs = 0;
  bool aligned = true;
};
Result<bool> binary_2d_views(OpenCLDevice& device, DType dtype, const ClRows& ar, const ClRows& br, const ClRows& yr,
                             Binary2dViews* v) {
  if (!two_d(ar, &v->a_rs) || !two_d(br, &v->b_rs) || !two_d(yr, &v->y_rs) || yr.col_stride != 1 ||
      yr.cols >= kRowMaxCols)
    return false;
  for (const ClRows* r : {&ar, &br, &yr}) {
    if (r->col_stride != 1) continue;
    auto ok = rows_chunk_aligned(device, dtype, {*r});
    if (!ok) return ok.status();
    v->aligned = v->aligned && *ok;
  }
  return true;
}

// binary_2d, or false when a, b or y is not a 2-D view it takes.
Result<bool> try_binary_2d(OpenCLDevice& device, DType dtype, const std::string& program_name,
                           const std::string& source, const Tensor& a, const ClRows& ar, const Tensor& b,
                           const ClRows& br, const Tensor& y, const ClRows& yr, bool raw) {
  Binary2dViews views;
  auto ok = binary_2d_views(device, dtype, ar, br, yr, &views);
  if (!ok || !*ok) return ok;
  const cl_long a_rs = views.a_rs, b_rs = views.b_rs, y_rs = views.y_rs;
  const bool aligned = views.aligned;
  RowPlan plan;
  plan.raw = raw;  // variant "raw": DNNB_ROW_RAW=1
  auto kernel = opencl_kernel(device, program_name, source, "binary_2d", row_options(device, dtype, 1, aligned, plan));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(a)).add(ar.offset).add(a_rs).add(static_cast<cl_int>(ar.col_stride));
  args.add(cl_buffer(b)).add(br.offset).add(b_rs).add(static_cast<cl_int>(br.col_stride));
  args.add(cl_buffer(y)).add(yr.offset).add(y_rs).add(yr.rows).add(static_cast<cl_int>(yr.cols));
  DNNB_TRY(args.status());
  DNNB_TRY(launch_elementwise_rows(device, *kernel, yr.rows, yr.cols, program_name + "/binary_2d",
                                   row_chunk_width(dtype)));
  return true;
}

// binary_tile (binary_body.cl): the views binary_2d takes, `tile_rows` rows of one column chunk per
// work-item, each operand's layout built in as a mode; false when a, b or y is not such a view.
// div_recip: div's DNNB_DIV_RECIP=1 (div.cl; f16/bf16).
Result<bool> try_binary_tile(OpenCLDevice& device, DType dtype, const std::string& program_name,
                             const std::string& source, const Tensor& a, const ClRows& ar, const Tensor& b,
                             const ClRows& br, const Tensor& y, const ClRows& yr, int tile_rows, bool div_recip) {
  Binary2dViews views;
  auto ok = binary_2d_views(device, dtype, ar, br, yr, &views);
  if (!ok || !*ok) return ok;
  const cl_long a_rs = views.a_rs, b_rs = views.b_rs, y_rs = views.y_rs;
  const bool aligned = views.aligned;
  // 0 [R, C], 1 [R, 1], 2 [1, C], 3 [1, 1] (binary_body.cl); a row stride of 0 repeats one row.
  const auto mode = [](const ClRows& v, cl_long rs) { return (v.col_stride == 1 ? 0 : 1) + (rs == 0 ? 2 : 0); };
  const std::string options = row_options(device, dtype, 1, aligned) + " -DDNNB_TILE_ROWS=" +
                              std::to_string(tile_rows) + " -DDNNB_A_MODE=" + std::to_string(mode(ar, a_rs)) +
                              " -DDNNB_B_MODE=" + std::to_string(mode(br, b_rs)) +
                              (div_recip ? " -DDNNB_DIV_RECIP=1" : "");
  auto kernel = opencl_kernel(device, program_name, source, "binary_tile", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(a)).add(ar.offset).add(a_rs);
  args.add(cl_buffer(b)).add(br.offset).add(b_rs);
  args.add(cl_buffer(y)).add(yr.offset).add(y_rs).add(yr.rows).add(static_cast<cl_int>(yr.cols));
  DNNB_TRY(args.status());
  // Dimension 1 walks tiles of rows (the kernel loops over the rest).
  DNNB_TRY(launch_elementwise_rows(device, *kernel, (yr.rows + tile_rows - 1) / tile_rows, yr.cols,
                                   program_name + "/binary_tile", row_chunk_width(dtype)));
  return true;
}

}  // namespace

Status run_unary(OpCall& call, const std::string& program_name, const std::string& source, bool chunks,
                 int half_math) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input(program_name + ": expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != y.shape)
    return Status::bad_input(program_name + ": x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (y.numel() == 0) return Status::ok();
  const DType dtype = call.problem.dtype;
  if (half_math != 0 && dtype == DType::f32)
    return Status::bad_input(program_name + ": the 16-bit math tiers are for f16/bf16 outputs only");
  const std::string math = half_math != 0 ? " -DDNNB_HALF_MATH=" + std::to_string(half_math) : "";
  const std::string options = row_options(**device, dtype, 1, false) + math;
  if (chunks && is_flat(x) && is_flat(y)) {
    auto aligned = rows_chunk_aligned(**device, dtype, {flat_rows(x.offset), flat_rows(y.offset)});
    if (!aligned) return aligned.status();
    auto kernel =
        opencl_kernel(**device, program_name, source, "unary_chunks", row_options(**device, dtype, 1, *aligned) + math);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(x)).add(cl_long{x.offset}).add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), program_name + "/unary_chunks", row_chunk_width(dtype));
  }
  if (is_flat(x) && is_flat(y)) {
    auto kernel = opencl_kernel(**device, program_name, source, "unary_flat", options);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(x)).add(cl_long{x.offset}).add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), program_name + "/unary_flat");
  }
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto kernel = opencl_kernel(**device, program_name, source, "unary_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, program_name + "/unary_rows");
}

Status run_binary(OpCall& call, const std::string& program_name, const std::string& source, bool two_d_path,
                  bool raw, int tile_rows, bool div_recip) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input(program_name + ": expects two inputs (a, b) and one output (y)");
  const Tensor& y = call.outputs[0];
  auto a = call.inputs[0].broadcast_to(y.shape);
  if (!a) return Status::bad_input(program_name + ": input a: " + a.status().message);
  auto b = call.inputs[1].broadcast_to(y.shape);
  if (!b) return Status::bad_input(program_name + ": input b: " + b.status().message);
  if (y.numel() == 0) return Status::ok();
  const std::string options = row_options(**device, call.problem.dtype, 1, false);
  const Tensor& in_a = call.inputs[0];
  const Tensor& in_b = call.inputs[1];
  if (in_a.shape == y.shape && in_b.shape == y.shape && is_flat(in_a) && is_flat(in_b) && is_flat(y)) {
    auto kernel = opencl_kernel(**device, program_name, source, "binary_flat", options);
    if (!kernel) return kernel.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(in_a)).add(cl_long{in_a.offset}).add(cl_buffer(in_b)).add(cl_long{in_b.offset});
    args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.numel()});
    DNNB_TRY(args.status());
    return launch_flat(**device, *kernel, y.numel(), program_name + "/binary_flat");
  }
  auto ar = cl_rows(*a);
  if (!ar) return ar.status();
  auto br = cl_rows(*b);
  if (!br) return br.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  if (tile_rows > 0) {
    auto done = try_binary_tile(**device, call.problem.dtype, program_name, source, *a, *ar, *b, *br, y, *yr,
                                tile_rows, div_recip);
    if (!done) return done.status();
    if (*done) return Status::ok();
  } else if (two_d_path) {
    auto done = try_binary_2d(**device, call.problem.dtype, program_name, source, *a, *ar, *b, *br, y, *yr, raw);
    if (!done) return done.status();
    if (*done) return Status::ok();
  }
  auto kernel = opencl_kernel(**device, program_name, source, "binary_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(*a)).add(*ar).add(cl_buffer(*b)).add(*br).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, program_name + "/binary_rows");
}

bool register_unary(const std::string& op, const char* op_source, bool f32_default_flat, bool half_tier) {
  std::string source = program_source({op_source, opencl_source::row_body, opencl_source::unary_body});
  // 16-bit outputs of the ops with a half tier default to "halfn" (native exp2/recip, within
  // 0.505 ulp on every f16/bf16 input of each device tested: tests/opencl/test_half_math.cpp):
  // on the H200's OpenCL at 16384 x 8192 (session 5) 70-96% of copy against 52-86% with the
  // built-in math, which stays as variant "fullmath".
  bool ok = register_opencl(op, float_dtypes(),
                            [op, source, f32_default_flat, half_tier](OpCall& call) {
                              const bool chunks = !(f32_default_flat && call.problem.dtype == DType::f32);
                              const int half_math = half_tier && call.problem.dtype != DType::f32 ? 2 : 0;
                              return run_unary(call, op, source, chunks, half_math);
                            }) &&
            register_opencl(op, "legacy", float_dtypes(),
                            [op, source](OpCall& call) { return run_unary(call, op, source, false); });
  // Keeps unary_chunks measurable for every dtype where the default is not it.
  if (f32_default_flat)
    ok = register_opencl(op, "chunks", float_dtypes(),
                         [op, source](OpCall& call) { return run_unary(call, op, source, true); }) &&
         ok;
  // The 16-bit math tiers, unary_chunks for contiguous views (strided ones: unary_rows, same math).
  if (half_tier)
    ok = register_opencl(op, "half", {DType::f16, DType::bf16},
                         [op, source](OpCall& call) { return run_unary(call, op, source, true, 1); }) &&
         register_opencl(op, "halfn", {DType::f16, DType::bf16},
                         [op, source](OpCall& call) { return run_unary(call, op, source, true, 2); }) &&
         register_opencl(op, "fullmath", {DType::f16, DType::bf16},
                         [op, source](OpCall& call) { return run_unary(call, op, source, true, 0); }) &&
         ok;
  return ok;
}

bool register_binary(const std::string& op, const char* op_source, bool div_recip) {
  std::string source = program_source({op_source, opencl_source::row_body, opencl_source::binary_body});
  // "": 2-D broadcasts as binary_tile with 4 rows of one column chunk per work-item (promoted from
  // "rows4" after the H200, 2026-11-21, session 6, 16384 x 8192 in one run: add/mul/div with
  // b = 16384x1 or 1x8192 at 92-98% of copy for every dtype, against 60-80% for 16-bit and
  // 71-97% for f32 with binary_2d; checked there for add, sub, mul and div). Same results as before.
  bool ok = register_opencl(op, float_dtypes(),
                            [op, source](OpCall& call) { return run_binary(call, op, source, true, false, 4); }) &&
            // "chunk": binary_2d, one 16-byte chunk per work-item (the default until session 6).
            register_opencl(op, "chunk", float_dtypes(),
                            [op, source](OpCall& call) { return run_binary(call, op, source, true); }) &&
            register_opencl(op, "legacy", float_dtypes(),
                            [op, source](OpCall& call) { return run_binary(call, op, source, false); }) &&
            // "raw": binary_2d with both chunk loads issued before any conversion (16-bit broadcasts).
            register_opencl(op, "raw", float_dtypes(),
                            [op, source](OpCall& call) { return run_binary(call, op, source, true, true); }) &&
            // "rows8": 2-D broadcasts take binary_tile with 8 rows of one column chunk per work-item
            // (the default takes 4), the operand layouts built in (same results as the default;
            // same-shape contiguous operands stay on binary_flat, other views on binary_rows).
            register_opencl(op, "rows8", float_dtypes(),
                            [op, source](OpCall& call) { return run_binary(call, op, source, true, false, 8); });
  // "rows4r" (div, f16/bf16): rows4 with a * (1/b) and guards (div.cl DNNB_DIV_RECIP).
  if (div_recip)
    ok = register_opencl(op, "rows4r", {DType::f16, DType::bf16},
                         [op, source](OpCall& call) { return run_binary(call, op, source, true, false, 4, true); }) &&
         ok;
  return ok;
}

}  // namespace dnnb::opencl
