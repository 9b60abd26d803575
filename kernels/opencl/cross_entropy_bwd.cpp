// cross_entropy_bwd on OpenCL: cross_entropy_bwd.cl. A one-work-group kernel counts the kept
// rows into the device's scratch buffer, then one work-group per row writes its gradient.
// The per-row kernel is ce_bwd_rows_cached when the row fits the register cache and both views
// have unit column stride, else ce_bwd_rows; variant "legacy" always takes ce_bwd_rows.
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
  DNNB_TRY(launch_row_cached(device, *kernel, lr.rows, "cross_entropy_bwd/ce_bwd_rows_cached", plan.wg, plan.rows_per_group));
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
  const std::string options = row_options(**device, call.problem.dtype, 1, false, rows_kernel_plan(plan));
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

  if (plan.cached) {
    auto done = try_ce_bwd_rows_cached(call, plan, **device, source, *lr, *dr, *ignore_index, *count);
    if (!done) return done.status();
    if (*done) return Status::ok();
  }
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
  // The default's variant per dtype (f32, f16, bf16), from the H200 of 2026-11-21
  // (docs/opencl.md): f32 297 us with wg128 against 344, bf16 321 with wg128p against 384.
  // The defaults' plans with raw loads (variant "raw" until 2026-11-21, session 5), measured on
  // the H200's OpenCL at 16384 x 8192 against the plans before (docs/opencl.md, "Session 5"):
  // f32 289 us against 295, bf16 224 against 320.
  // Session 6 (H200, 16384 x 8192, one run, docs/opencl.md): bf16 wg128pr with the fast exp
  // ("wg128prn") 190 us (66.2%) against 218 (57.9%); checked there.
  // Session 8 (2026-11-25, an H100 that session, copy 3.02 TB/s; 16384 x 8192, one run): bf16 one
  // reduction per row ("wg128prno") 214.3 us (82.9% of copy) against wg128prn's 216.4 (82.1%);
  // wg128preno 214.3, wg128rno 232.4. Not yet timed on the H200.
  const RowDefaults defaults{RowVariant::wg128r, RowVariant::wg256r, RowVariant::wg128prno};
  // bf16 fast exp (row_body.cl dnnb_row_exp; f32 runs these variants with the built-in exp): the
  // bf16 default's plan (wg128pr, two exps per element), its early-load twin, and the unpacked
  // wg128r (one exp per element, twice the registers).
  // One reduction per row (logsumexp_body.cl, DNNB_ROW_ONE): the bf16 default's plan (wg128prno), its
  // early-load twin and the unpacked wg128rno (the same arithmetic: both take each exp about the
  // item's max, once if the compiler keeps it from the sum pass, as clang's does for wg128prn too).
  // No online or 64-item plans: clang + ptxas kept the widened row across the write pass there
  // (127 registers and two exps per element; 64-item rows 249-255 registers).
  return register_row_op("cross_entropy_bwd", {DType::f32, DType::bf16}, /*with_stream=*/false, defaults, std::move(source), run_cross_entropy_bwd,
                         /*with_raw=*/true,
                         {RowVariant::wg128prn, RowVariant::wg128pren, RowVariant::wg128rn, RowVariant::wg128prno,
                          RowVariant::wg128preno, RowVariant::wg128rno});
}

}  // namespace
DNNB_REGISTER(register_cross_entropy_bwd());
}  // namespace dnnb::opencl
