// layernorm over the last dim on OpenCL: layernorm.cl. layernorm_cached when the row fits its
// register cache and every view has unit column stride, else layernorm_rows.
#include "kernels/opencl/layernorm_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/row_body_cl.h"

namespace dnnb::opencl {
namespace {

// layernorm_cached, or false when the problem is not one it takes.
Result<bool> try_layernorm_cached(OpCall& call, const RowPlan& plan, OpenCLDevice& device, const std::string& source, const ClRows& xr,
                                  const ClRows& wr, const ClRows& br, const ClRows& yr, float eps) {
  const DType dtype = call.problem.dtype;
  const int vecs = row_cache_vecs(dtype, xr.cols, plan);
  if (vecs == 0 || xr.cols >= kRowMaxCols) return false;
  for (const ClRows* v : {&xr, &wr, &br, &yr})
    if (v->col_stride != 1) return false;
  auto kernel = row_cached_kernel(device, "layernorm", source, "layernorm_cached", dtype, vecs, {xr, wr, br, yr}, plan);
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(xr).add(cl_buffer(call.inputs[1])).add(wr);
  args.add(cl_buffer(call.inputs[2])).add(br).add(static_cast<cl_float>(eps)).add(cl_buffer(call.outputs[0])).add(yr);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, xr.rows, "layernorm/layernorm_cached", plan.wg));
  return true;
}

Status run_layernorm(OpCall& call, const std::string& source, const RowPlan& plan) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 3 || call.outputs.size() != 1)
    return Status::bad_input("layernorm: expects inputs (x, w, b) and one output (y)");
  auto eps = call.problem.get_double("eps", 1e-5);
  if (!eps) return eps.status();
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& b = call.inputs[2];
  const Tensor& y = call.outputs[0];
  if (x.ndim() == 0 || x.shape != y.shape)
    return Status::bad_input("layernorm: x " + x.describe() + " and y " + y.describe() + " must share a shape of >= 1 dim");
  const Shape row_shape = {x.shape.back()};
  if (w.shape != row_shape || b.shape != row_shape)
    return Status::bad_input("layernorm: w " + w.describe() + " and b " + b.describe() + " must be [" +
                             std::to_string(x.shape.back()) + "]");
  if (y.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto wr = cl_rows(w);
  if (!wr) return wr.status();
  auto br = cl_rows(b);
  if (!br) return br.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto done = try_layernorm_cached(call, plan, **device, source, *xr, *wr, *br, *yr, static_cast<float>(*eps));
  if (!done) return done.status();
  if (*done) return Status::ok();
  auto kernel =
      opencl_kernel(**device, "layernorm", source, "layernorm_rows", row_options(**device, call.problem.dtype, 1, false));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(w)).add(*wr).add(cl_buffer(b)).add(*br);
  args.add(static_cast<cl_float>(*eps)).add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, "layernorm/layernorm_rows");
}

bool register_layernorm() {
  std::string source = program_source({opencl_source::row_body, opencl_source::layernorm});
  // f32: 256 items per row, a float cache. f16: 128 items, w and b loaded in groups ahead of
  // their use. bf16: 64 items per row (two warps) with the row cached as its storage bits, up to
  // 128 registers of cache per item (docs/opencl.md, "Row ops").
  const RowPlan f32{.raw = true};
  const RowPlan f16{.wg = 128, .raw = true, .early = true};
  const RowPlan bf16{.wg = 64, .packed = true, .max_regs = 128, .raw = true};
  return register_row_op("layernorm", float_dtypes(), RowPlans{f32, f16, bf16}, source, run_layernorm);
}

}  // namespace
DNNB_REGISTER(register_layernorm());
}  // namespace dnnb::opencl
