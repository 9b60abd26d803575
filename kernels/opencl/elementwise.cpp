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

// A view that binary_tile addresses as off + r * rs + c * cs (cs 0 or 1): at most one outer
// dim; false otherwise.
bool two_d(const ClRows& v, cl_long* row_stride) {
  if (v.outer_dims > 1 || (v.col_stride != 0 && v.col_stride != 1)) return false;
  *row_stride = v.outer_dims == 1 ? v.stride[0] : 0;
  return true;
}

// The views binary_tile takes: a, b and y 2-D (row strides into *_rs), y with unit column stride
// and fewer than kRowMaxCols columns; false otherwise. *aligned: every operand read in chunks
// (column stride 1) is chunk-aligned.
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

// Rows of one column chunk per work-item in binary_tile.
constexpr int kTileRows = 4;

// binary_tile (binary_body.cl): 2-D broadcasts, kTileRows rows of one column chunk per work-item,
// each operand's layout built in as a mode; false when a, b or y is not such a view.
Result<bool> try_binary_tile(OpenCLDevice& device, DType dtype, const std::string& program_name,
                             const std::string& source, const Tensor& a, const ClRows& ar, const Tensor& b,
                             const ClRows& br, const Tensor& y, const ClRows& yr) {
  Binary2dViews views;
  auto ok = binary_2d_views(device, dtype, ar, br, yr, &views);
  if (!ok || !*ok) return ok;
  const cl_long a_rs = views.a_rs, b_rs = views.b_rs, y_rs = views.y_rs;
  const bool aligned = views.aligned;
  // 0 [R, C], 1 [R, 1], 2 [1, C], 3 [1, 1] (binary_body.cl); a row stride of 0 repeats one row.
  const auto mode = [](const ClRows& v, cl_long rs) { return (v.col_stride == 1 ? 0 : 1) + (rs == 0 ? 2 : 0); };
  const std::string options = row_options(device, dtype, 1, aligned) + " -DDNNB_TILE_ROWS=" +
                              std::to_string(kTileRows) + " -DDNNB_A_MODE=" + std::to_string(mode(ar, a_rs)) +
                              " -DDNNB_B_MODE=" + std::to_string(mode(br, b_rs));
  auto kernel = opencl_kernel(device, program_name, source, "binary_tile", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(a)).add(ar.offset).add(a_rs);
  args.add(cl_buffer(b)).add(br.offset).add(b_rs);
  args.add(cl_buffer(y)).add(yr.offset).add(y_rs).add(yr.rows).add(static_cast<cl_int>(yr.cols));
  DNNB_TRY(args.status());
  // Dimension 1 walks tiles of rows (the kernel loops over the rest).
  DNNB_TRY(launch_elementwise_rows(device, *kernel, (yr.rows + kTileRows - 1) / kTileRows, yr.cols,
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

Status run_binary(OpCall& call, const std::string& program_name, const std::string& source) {
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
  auto done = try_binary_tile(**device, call.problem.dtype, program_name, source, *a, *ar, *b, *br, y, *yr);
  if (!done) return done.status();
  if (*done) return Status::ok();
  auto kernel = opencl_kernel(**device, program_name, source, "binary_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(*a)).add(*ar).add(cl_buffer(*b)).add(*br).add(cl_buffer(y)).add(*yr);
  DNNB_TRY(args.status());
  return launch_elementwise_rows(**device, *kernel, yr->rows, yr->cols, program_name + "/binary_rows");
}

bool register_unary(const std::string& op, const char* op_source, bool f32_flat, bool half_tier) {
  std::string source = program_source({op_source, opencl_source::row_body, opencl_source::unary_body});
  // f16/bf16 of the ops with 16-bit math tiers take level 2 (native exp2 and reciprocal; prelude.cl).
  bool ok = register_opencl(op, float_dtypes(), [op, source, f32_flat, half_tier](OpCall& call) {
    const bool chunks = !(f32_flat && call.problem.dtype == DType::f32);
    const int half_math = half_tier && call.problem.dtype != DType::f32 ? 2 : 0;
    return run_unary(call, op, source, chunks, half_math);
  });
  if (half_tier)
    ok = register_opencl(op, "portable_math",
                         "On a device whose native_exp2 and native_recip dnnb_opencl_math_tests has not checked: "
                         "f16/bf16 math from the built-in functions and a Newton-refined reciprocal, accurate "
                         "whatever the device's approximations, at a few more instructions per element",
                         {DType::f16, DType::bf16},
                         [op, source](OpCall& call) { return run_unary(call, op, source, true, 1); }) &&
         ok;
  return ok;
}

bool register_binary(const std::string& op, const char* op_source) {
  std::string source = program_source({op_source, opencl_source::row_body, opencl_source::binary_body});
  return register_opencl(op, float_dtypes(), [op, source](OpCall& call) { return run_binary(call, op, source); });
}

}  // namespace dnnb::opencl
