// softmax over the last dim on OpenCL (scale, softcap, additive broadcast mask): softmax.cl.
// softmax_cached when the row fits its register cache and x, y (and a mask row) have unit column
// stride, else softmax_rows.
#include "kernels/opencl/logsumexp_body_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/row_body_cl.h"
#include "kernels/opencl/softmax_cl.h"

namespace dnnb::opencl {
namespace {

// 0: no mask; 1: mask rows with unit column stride; 2: one value per row; -1: any other
// layout (softmax_cached cannot take it).
int mask_mode(bool has_mask, const ClRows& mr) {
  if (!has_mask) return 0;
  if (mr.col_stride == 1) return 1;
  if (mr.col_stride == 0) return 2;
  return -1;
}

// softmax_cached, or false when the problem is not one it takes.
Result<bool> try_softmax_cached(OpCall& call, const RowPlan& plan, OpenCLDevice& device, const std::string& source, const Tensor& x,
                                const ClRows& xr, const Tensor& mask, const ClRows& mr, int mode, float scale,
                                float softcap, const Tensor& y, const ClRows& yr) {
  const DType dtype = call.problem.dtype;
  const int vecs = row_cache_vecs(dtype, xr.cols, plan);
  if (vecs == 0 || mode < 0 || xr.col_stride != 1 || yr.col_stride != 1 || xr.cols >= kRowMaxCols) return false;
  // Early plans build the mask mode in (softmax.cl: no mask registers without a mask).
  const std::string extra = plan.early ? " -DDNNB_SOFTMAX_MASK=" + std::to_string(mode) : "";
  auto kernel = mode == 1
                    ? row_cached_kernel(device, "softmax", source, "softmax_cached", dtype, vecs, {xr, yr, mr}, plan, extra)
                    : row_cached_kernel(device, "softmax", source, "softmax_cached", dtype, vecs, {xr, yr}, plan, extra);
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(xr).add(cl_buffer(mask)).add(mr).add(cl_int{mode});
  args.add(static_cast<cl_float>(scale)).add(static_cast<cl_float>(softcap)).add(cl_buffer(y)).add(yr);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, xr.rows, "softmax/softmax_cached", plan.wg));
  return true;
}

Status run_softmax(OpCall& call, const std::string& source, const RowPlan& plan) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const bool has_mask = call.inputs.size() == 2;
  if ((call.inputs.size() != 1 && !has_mask) || call.outputs.size() != 1)
    return Status::bad_input("softmax: expects inputs (x[, mask]) and one output (y)");
  auto scale = call.problem.get_double("scale", 1.0);
  if (!scale) return scale.status();
  auto softcap = call.problem.get_double("softcap", 0.0);
  if (!softcap) return softcap.status();
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  if (x.shape != y.shape || x.ndim() == 0)
    return Status::bad_input("softmax: x " + x.describe() + " and y " + y.describe() + " must share a shape of >= 1 dim");
  auto mask = (has_mask ? call.inputs[1] : x).broadcast_to(x.shape);
  if (!mask) return Status::bad_input("softmax: mask: " + mask.status().message);
  if (y.numel() == 0) return Status::ok();
  auto xr = cl_rows(x);
  if (!xr) return xr.status();
  auto mr = cl_rows(*mask);
  if (!mr) return mr.status();
  auto yr = cl_rows(y);
  if (!yr) return yr.status();
  auto done = try_softmax_cached(call, plan, **device, source, x, *xr, *mask, *mr, mask_mode(has_mask, *mr),
                                 static_cast<float>(*scale), static_cast<float>(*softcap), y, *yr);
  if (!done) return done.status();
  if (*done) return Status::ok();
  auto kernel =
      opencl_kernel(**device, "softmax", source, "softmax_rows", row_options(**device, call.problem.dtype, 1, false));
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, xr->rows, xr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(x)).add(*xr).add(cl_buffer(*mask)).add(*mr).add(cl_int{has_mask ? 1 : 0});
  args.add(static_cast<cl_float>(*scale)).add(static_cast<cl_float>(*softcap));
  args.add(cl_buffer(y)).add(*yr).add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, "softmax/softmax_rows");
}

bool register_softmax() {
  // logsumexp_body.cl: the row statistics softmax_cached shares with the cross-entropy kernels.
  std::string source = program_source({opencl_source::row_body, opencl_source::logsumexp_body, opencl_source::softmax});
  // f32: 256 items per row, a float cache. f16/bf16: 128 items per row (a row of 8192 columns is
  // 8 chunks per item), the mask loaded with x, and the fast exp (docs/opencl.md, "Row ops").
  const RowPlan f32{.raw = true};
  const RowPlan half{.wg = 128, .raw = true, .early = true, .fast_exp = true};
  return register_row_op("softmax", float_dtypes(), RowPlans{f32, half, half}, source, run_softmax);
}

}  // namespace
DNNB_REGISTER(register_softmax());
}  // namespace dnnb::opencl
