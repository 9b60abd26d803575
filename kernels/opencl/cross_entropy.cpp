// cross_entropy (mean over kept rows, ignore_index) on OpenCL: cross_entropy.cl. Per-row
// losses go to the device's scratch buffer; a one-work-group kernel reduces them in a fixed
// order, so the loss is deterministic.
// The per-row kernel is ce_rows_cached when the row fits the register cache with unit column
// stride, else ce_rows. bf16 on a device with NVIDIA's inline PTX takes ce_rows_warp
// (cross_entropy_warp.h: one warp per row) for every view with unit column stride instead.
#include "kernels/opencl/cross_entropy_cl.h"
#include "kernels/opencl/cross_entropy_warp.h"
#include "kernels/opencl/logsumexp_body_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/row_body_cl.h"

namespace dnnb::opencl {
namespace {

// ce_rows_cached into `partial`, or false when the problem is not one it takes.
Result<bool> try_ce_rows_cached(OpCall& call, const RowPlan& plan, OpenCLDevice& device, const std::string& source, const ClRows& lr,
                                int64_t ignore_index, cl_mem partial) {
  const DType dtype = call.problem.dtype;
  const int vecs = row_cache_vecs(dtype, lr.cols, plan);
  if (vecs == 0 || lr.col_stride != 1 || lr.cols >= kRowMaxCols) return false;
  auto kernel = row_cached_kernel(device, "cross_entropy", source, "ce_rows_cached", dtype, vecs, {lr}, plan);
  if (!kernel) return kernel.status();
  if (*kernel == nullptr) return false;
  const Tensor& target = call.inputs[1];
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(lr).add(cl_buffer(target)).add(cl_long{target.offset});
  args.add(cl_long{target.strides[0]}).add(cl_long{ignore_index}).add(partial);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_row_cached(device, *kernel, lr.rows, "cross_entropy/ce_rows_cached", plan.wg));
  return true;
}

// `warp`: the warp kernel first (per-warp pairs into `partial`), `plan` for the views it does not take.
Status run_cross_entropy(OpCall& call, const std::string& source, const RowPlan& plan, bool warp = false) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cross_entropy: expects inputs (logits, target) and one output (loss)");
  auto ignore_index = call.problem.get_int("ignore_index", -100);
  if (!ignore_index) return ignore_index.status();
  const Tensor& logits = call.inputs[0];
  const Tensor& target = call.inputs[1];
  const Tensor& loss = call.outputs[0];
  if (logits.ndim() != 2 || target.ndim() != 1 || target.shape[0] != logits.shape[0] || target.dtype != DType::i64)
    return Status::bad_input("cross_entropy: logits " + logits.describe() + " must be [N, C] and target " +
                             target.describe() + " an i64 [N]");
  if (loss.numel() != 1) return Status::bad_input("cross_entropy: loss " + loss.describe() + " must be 0-d");
  auto lr = cl_rows(logits);
  if (!lr) return lr.status();
  const int64_t rows = logits.shape[0];
  // (loss, kept) pairs for ce_finish: one per row, or one per warp of the warp plan's grid.
  const int64_t max_pairs = warp ? ce_warp_max_pairs(rows) : std::max<int64_t>(rows, 1);
  auto partial = (*device)->scratch(static_cast<size_t>(max_pairs) * 2 * sizeof(cl_float));
  if (!partial) return partial.status();
  const std::string options = row_options(**device, call.problem.dtype, 1, false);

  bool rows_done = rows == 0;
  int64_t pairs = rows;
  if (!rows_done && warp) {
    auto warp_pairs = try_ce_rows_warp(**device, cl_buffer(logits), *lr, cl_buffer(target), target.offset,
                                       target.strides[0], *ignore_index, *partial);
    if (!warp_pairs) return warp_pairs.status();
    rows_done = *warp_pairs > 0;
    if (rows_done) pairs = *warp_pairs;
  }
  if (!rows_done) {
    auto done = try_ce_rows_cached(call, plan, **device, source, *lr, *ignore_index, *partial);
    if (!done) return done.status();
    rows_done = *done;
  }
  if (!rows_done) {
    auto kernel = opencl_kernel(**device, "cross_entropy", source, "ce_rows", options);
    if (!kernel) return kernel.status();
    auto geometry = row_geometry(**device, *kernel, lr->rows, lr->cols);
    if (!geometry) return geometry.status();
    KernelArgs args(*kernel);
    args.add(cl_buffer(logits)).add(*lr).add(cl_buffer(target)).add(cl_long{target.offset});
    args.add(cl_long{target.strides[0]}).add(cl_long{*ignore_index}).add(*partial);
    args.add_local(geometry->scratch_bytes());
    DNNB_TRY(args.status());
    DNNB_TRY(launch_rows(**device, *kernel, *geometry, "cross_entropy/ce_rows"));
  }
  auto finish = opencl_kernel(**device, "cross_entropy", source, "ce_finish", options);
  if (!finish) return finish.status();
  auto limit = work_group_limit(**device, *finish, 256);
  if (!limit) return limit.status();
  KernelArgs args(*finish);
  args.add(*partial).add(cl_long{pairs}).add(cl_buffer(loss)).add(cl_long{loss.offset});
  args.add_local(*limit * sizeof(cl_float));
  DNNB_TRY(args.status());
  const size_t global = *limit;
  return enqueue(**device, *finish, 1, &global, &global, "cross_entropy/ce_finish");
}

bool register_cross_entropy() {
  std::string source =
      program_source({opencl_source::row_body, opencl_source::logsumexp_body, opencl_source::cross_entropy});
  // f32: 128 items per row, a float cache. bf16: the row cached as its storage bits, the fast exp,
  // one reduction per row with each item's (max, sum) taken in one streaming pass (few registers,
  // so many rows per compute unit) (docs/opencl.md, "Row ops").
  const RowPlan f32{.wg = 128, .raw = true};
  const RowPlan bf16{.wg = 128, .packed = true, .raw = true, .fast_exp = true, .one_reduction = true, .online = true};
  // bf16 takes the warp kernel where it runs (NVIDIA's inline PTX, or its test emulation), with the
  // plan above for the views it does not take.
  const RowOpRun run_default = [](OpCall& call, const std::string& src, const RowPlan& plan) {
    auto device = opencl_device(call);
    if (!device) return device.status();
    return run_cross_entropy(call, src, plan, call.problem.dtype == DType::bf16 && ce_warp_available(**device));
  };
  return register_row_op("cross_entropy", {DType::f32, DType::bf16}, RowPlans{f32, f32, bf16}, source,
                         [](OpCall& call, const std::string& src, const RowPlan& plan) {
                           return run_cross_entropy(call, src, plan);
                         },
                         run_default);
}

}  // namespace
DNNB_REGISTER(register_cross_entropy());
}  // namespace dnnb::opencl
