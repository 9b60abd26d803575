// cross_entropy_bwd on OpenCL: cross_entropy_bwd.cl. A one-work-group kernel counts the kept
// rows into the device's scratch buffer, then one work-group per row writes its gradient.
// The per-row kernel is ce_bwd_rows_cached when the row fits the register cache and both views
// have unit column stride, else ce_bwd_rows.
#include "kernels/opencl/cross_entropy_bwd_cl.h"
#include "kernels/opencl/logsumexp_body_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/row_body_cl.h"

namespace dnnb::opencl {
namespace {

// ce_bwd_rows_cached, or false when the problem is not one it takes.
Result<bool> try_ce_bwd_rows_cached(OpCall& call, const RowPlan& plan, OpenCLDevice& device, const std::string& source, const ClRows& lr,
                                    const ClRows& dr, int64_t ignore_index, cl_mem count) {
  const DType dtype = call.problem.dtype;
  const int vecs = row_cache_vecs(dtype, lr.cols, plan);
  if (vecs == 0 || lr.col_stride != 1 || dr.col_stride != 1 || lr.cols >= kRowMaxCols) return false;
  auto kernel = row_cached_kernel(device, "cross_entropy_bwd", source, "ce_bwd_rows_cached", dtype, vecs, {lr, dr}, plan);
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  const Tensor& target = call.inputs[1];
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(lr).add(cl_buffer(target)).add(cl_long{target.offset});
  args.add(cl_long{target.strides[0]}).add(cl_long{ignore_index}).add(count).add(cl_buffer(call.outputs[0])).add(dr);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, lr.rows, "cross_entropy_bwd/ce_bwd_rows_cached", plan.wg));
  return true;
}

Status run_cross_entropy_bwd(OpCall& call, const std::string& source, const RowPlan& plan) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cross_entropy_bwd: expects inputs (logits, target) and one output (dlogits)");
  auto ignore_index = call.problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  const Tensor& logits = call.inputs[0];
  const Tensor& target = call.inputs[1];
  const Tensor& dlogits = call.outputs[0];
  if (logits.ndim() != 2 || target.ndim() != 1 || target.shape[0] != logits.shape[0] || target.dtype != DType::i64)
    return Status::bad_input("cross_entropy_bwd: logits " + logits.describe() + " must be [N, C] and target " +
                             target.describe() + " an i64 [N]");
  if (dlogits.shape != logits.shape)
    return Status::bad_input("cross_entropy_bwd: dlogits " + dlogits.describe() + " must have logits' shape");
  if (dlogits.numel() == 0) return Status::ok();
  auto lr = cl_rows(logits);
  if (!lr) return lr.status();
  auto dr = cl_rows(dlogits);
  if (!dr) return dr.status();
  auto count = (*device)->scratch(sizeof(cl_float));
  if (!count) return count.status();
  const std::string options = row_options(**device, call.problem.dtype, 1, false);
  const int64_t rows = logits.shape[0];

  auto counter = opencl_kernel(**device, "cross_entropy_bwd", source, "ce_count", options);
  if (!counter) return counter.status();
  auto limit = work_group_limit(**device, *counter, 256);
  if (!limit) return limit.status();
  KernelArgs count_args(*counter);
  count_args.add(cl_buffer(target)).add(cl_long{target.offset}).add(cl_long{target.strides[0]});
  count_args.add(cl_long{rows}).add(cl_long{*ignore_index}).add(*count).add_local(*limit * sizeof(cl_float));
  DNNB_TRY(count_args.status());
  const size_t count_global = *limit;
  DNNB_TRY(enqueue(**device, *counter, 1, &count_global, &count_global, "cross_entropy_bwd/ce_count"));

  auto done = try_ce_bwd_rows_cached(call, plan, **device, source, *lr, *dr, *ignore_index, *count);
  if (!done) return done.status();
  if (*done) return Status::ok();
  auto kernel = opencl_kernel(**device, "cross_entropy_bwd", source, "ce_bwd_rows", options);
  if (!kernel) return kernel.status();
  auto geometry = row_geometry(**device, *kernel, lr->rows, lr->cols);
  if (!geometry) return geometry.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(logits)).add(*lr).add(cl_buffer(target)).add(cl_long{target.offset});
  args.add(cl_long{target.strides[0]}).add(cl_long{*ignore_index}).add(*count).add(cl_buffer(dlogits)).add(*dr);
  args.add_local(geometry->scratch_bytes());
  DNNB_TRY(args.status());
  return launch_rows(**device, *kernel, *geometry, "cross_entropy_bwd/ce_bwd_rows");
}

bool register_cross_entropy_bwd() {
  std::string source =
      program_source({opencl_source::row_body, opencl_source::logsumexp_body, opencl_source::cross_entropy_bwd});
  // f32: 128 items per row, the exps cached as floats for the write. bf16: the row cached as its
  // storage bits (each exp recomputed in the write), the fast exp, and one reduction per row over
  // the items' (max, sum) pairs (docs/opencl.md, "Row ops").
  const RowPlan f32{.wg = 128, .raw = true};
  const RowPlan bf16{.wg = 128, .packed = true, .raw = true, .fast_exp = true, .one_reduction = true};
  return register_row_op("cross_entropy_bwd", {DType::f32, DType::bf16}, RowPlans{f32, f32, bf16}, source,
                         run_cross_entropy_bwd);
}

}  // namespace
DNNB_REGISTER(register_cross_entropy_bwd());
}  // namespace dnnb::opencl
