// rmsnorm over the last dim on OpenCL (torch and gemma forms): rmsnorm.cl. rmsnorm_cached when
// the row fits its register cache and every view has unit column stride, else rmsnorm_rows.
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/rmsnorm_cl.h"
#include "kernels/opencl/row_body_cl.h"

namespace dnnb::opencl {
namespace {

// rmsnorm_cached, or false when the problem is not one it takes.
Result<bool> try_rmsnorm_cached(OpCall& call, const RowPlan& plan, OpenCLDevice& device, const std::string& source, const ClRows& xr,
                                const ClRows& wr, const ClRows& yr, float eps, bool gemma) {
  const DType dtype = call.problem.dtype;
  const int vecs = row_cache_vecs(dtype, xr.cols, plan);
  if (vecs == 0 || xr.cols >= kRowMaxCols) return false;
  for (const ClRows* v : {&xr, &wr, &yr})
    if (v->col_stride != 1) return false;
  auto kernel = row_cached_kernel(device, "rmsnorm", source, "rmsnorm_cached", dtype, vecs, {xr, wr, yr}, plan);
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(xr).add(cl_buffer(call.inputs[1])).add(wr).add(static_cast<cl_float>(eps));
  args.add(cl_int{gemma ? 1 : 0}).add(cl_buffer(call.outputs[0])).add(yr);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, xr.rows, "rmsnorm/rmsnorm_cached", plan.wg));
  return true;
}

Status run_rmsnorm(OpCall& call, const std::string& source, const RowPlan& plan) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("rmsnorm: expects inputs (x, w) and one output (y)");
  auto eps = call.problem.get_double("eps", 1e-6);
  if (!eps) return eps.status();
  const std::string form = call.problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input("rmsnorm: form='" + form + "' (expected torch or gemma)");
  const Tensor& x = call.inputs[0];
  const Tensor& w = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (x.ndim() == 0 || x.shape != y.shape)
    return Status::bad_input("rmsnorm: x " + x.describe() + " and y " + y.describe() + " must share a shape of >= 1 dim");
  if (w.shape != Shape{x.shape.back()})
    return Status::bad_input("rmsnorm: w " + w.describe() + " must be [" + std::to_string(x.shape.back()) + "]");
  if (y.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto wr = cl_rows(w);
  if (!wr) return wr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto done = try_rmsnorm_cached(call, plan, **device, source, *xr, *wr, *yr, static_cast<float>(*eps), form == "gemma");
  if (!done) return done.status();
  if (*done) return Status::ok();
  auto kernel =
      opencl_kernel(**device, "rmsnorm", source, "rmsnorm_rows", row_options(**device, call.problem.dtype, 1, false));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(w)).add(*wr).add(static_cast<cl_float>(*eps));
  args.add(cl_int{form == "gemma" ? 1 : 0}).add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, "rmsnorm/rmsnorm_rows");
}

bool register_rmsnorm() {
  std::string source = program_source({opencl_source::row_body, opencl_source::rmsnorm});
  // f32: 256 items per row, a float cache. f16: 128 items, w loaded in groups ahead of its use.
  // bf16: 128 items with the row cached as its storage bits (docs/opencl.md, "Row ops").
  const RowPlan f32{.raw = true};
  const RowPlan f16{.wg = 128, .raw = true, .early = true};
  const RowPlan bf16{.wg = 128, .packed = true, .raw = true};
  return register_row_op("rmsnorm", float_dtypes(), RowPlans{f32, f16, bf16}, source, run_rmsnorm);
}

}  // namespace
DNNB_REGISTER(register_rmsnorm());
}  // namespace dnnb::opencl
