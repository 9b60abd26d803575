// cross_entropy (mean over kept rows, ignore_index) on OpenCL: cross_entropy.cl. Per-row
// losses go to the device's scratch buffer; a one-work-group kernel reduces them in a fixed
// order, so the loss is deterministic.
// The per-row kernel is ce_rows_cached when the row fits the register cache with unit column
// stride, else ce_rows; variant "legacy" always takes ce_rows. The warp variants of bf16
// (warp32nv, warp32nvpipe, warp32nvpipe4: cross_entropy_warp.h; NVIDIA only) take
// ce_rows_warp for every view with unit column stride and wg128prnos for the rest; so does the bf16
// default on NVIDIA (warp32nvpipe's plan; wg128prnos elsewhere).
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
  DNNB_TRY(launch_row_cached(device, *kernel, lr.rows, "cross_entropy/ce_rows_cached", plan.wg, plan.rows_per_group));
  return true;
}

// `warp`: the warp plan first (per-warp pairs into `partial`), `plan` for the views it does not take.
Status run_cross_entropy(OpCall& call, const std::string& source, const RowPlan& plan,
                         const CeWarpPlan* warp = nullptr) {
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
  const int64_t max_pairs = warp != nullptr ? ce_warp_max_pairs(rows) : std::max<int64_t>(rows, 1);
  auto partial = (*device)->scratch(static_cast<size_t>(max_pairs) * 2 * sizeof(cl_float));
  if (!partial) return partial.status();
  const std::string options = row_options(**device, call.problem.dtype, 1, false, rows_kernel_plan(plan));

  bool rows_done = rows == 0;
  int64_t pairs = rows;
  if (!rows_done && warp != nullptr) {
    auto warp_pairs = try_ce_rows_warp(**device, *warp, cl_buffer(logits), *lr, cl_buffer(target), target.offset,
                                       target.strides[0], *ignore_index, *partial);
    if (!warp_pairs) return warp_pairs.status();
    rows_done = *warp_pairs > 0;
    if (rows_done) pairs = *warp_pairs;
  }
  if (!rows_done && plan.cached) {
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

// A warp variant (bf16 only): skipped, with the reason, on devices without NVIDIA inline PTX.
bool register_ce_warp(const char* variant, CeWarpPlan warp, const std::string& source, const RowPlan& fallback) {
  Implementation impl;
  impl.op = "cross_entropy";
  impl.backend = "opencl";
  impl.variant = variant;
  impl.dtypes = {DType::bf16};
  impl.supports = [variant](const Problem& problem, const DeviceRuntime& device) -> Status {
    if (problem.dtype != DType::bf16)
      return Status::unsupported(std::string("opencl/") + variant + " cross_entropy is bf16 only");
    return ce_warp_supports(device);
  };
  impl.run = [variant, warp, source, fallback](OpCall& call) {
    if (call.problem.dtype != DType::bf16)  // (the harness asks supports first; a direct caller may not)
      return Status::unsupported(std::string("opencl/") + variant + " cross_entropy is bf16 only");
    return run_cross_entropy(call, source, fallback, &warp);
  };
  return Registry::instance().add_implementation(std::move(impl));
}

// The bf16 default's warp plan on NVIDIA (variant warp32nvpipe): persistent warps, 8 per group,
// 4 KB chunks, a 128-register cap (2 groups per SM).
constexpr CeWarpPlan kCeWarpPipe{8, 8, true, 128};

bool register_cross_entropy() {
  std::string source =
      program_source({opencl_source::row_body, opencl_source::logsumexp_body, opencl_source::cross_entropy});
  // The default's variant per dtype (f32, f16, bf16), from the H200 of 2026-11-21
  // (docs/opencl.md): bf16 146 us with wg128p against 181; f32 best with wg256 (172).
  // The defaults' plans with raw loads (variant "raw" until 2026-11-21, session 5), measured on
  // the H200's OpenCL at 16384 x 8192 against the plans before (docs/opencl.md, "Session 5"):
  // f32 157 us against 170, bf16 129 against 145.
  // Session 6 (H200, 16384 x 8192, one run, docs/opencl.md): f32 wg128pr 148 us (85.0%) against
  // wg256r's 154 (81.9%); bf16 wg128pr with the early loads and the fast exp ("wg128pren") 119 us
  // (53.1%) against 128 (49.1%); both checked there.
  // Session 8 (2026-11-25; the GPU machine was an H100 that session, copy 3.02 TB/s; 16384 x 8192,
  // one run): bf16 one reduction per row ("wg128prno") 117.7 us (75.5% of copy) against
  // wg128pren's 124.6 (71.3%); the other one-reduction plans in between (wg128prnos 121.0,
  // wg64prenos 122.2, wg64x2prenos 122.3, wg128prenos 123.8, wg128preno 128.7).
  // Session 14 (2026-11-26, H200, copy 4.28 TB/s, two rounds; docs/opencl.md): bf16 wg128prnos
  // (each item's statistics in one streaming pass: 46 registers against 87, clang + ptxas) 100.9 us
  // (62.2% of copy) against wg128prno's 108.4-108.5 (57.9%): on the H200 the plan with more groups
  // per SM wins where it lost on the H100. Persistent groups with the next row's loads in flight
  // (ce_rows_pipe, 3-5 groups per SM) were slower still (111-120 us) and were not kept.
  const RowDefaults defaults{RowVariant::wg128pr, RowVariant::wg128pr, RowVariant::wg128prnos};
  // bf16 fast exp (row_body.cl dnnb_row_exp; f32 runs these variants with the built-in exp): the
  // bf16 default's plan (wg128pr), its early-load twin, and the unpacked wg128r.
  // One reduction per row (logsumexp_body.cl, DNNB_ROW_ONE; two barriers per row here, only work-item
  // 0 needs the loss): the bf16 default's plan (wg128preno) and its plain-load twin; the same with
  // each item's statistics in one streaming pass (DNNB_LSE_ONLINE: 40 registers against 85, clang +
  // ptxas), also on 64-item rows, one and two per group.
  // The default ("") of bf16 on a device with NVIDIA's inline PTX (bf16_nv_ptx: an NVIDIA device of
  // compute capability >= 8) is warp32nvpipe's plan, with wg128prnos for the views it does not take;
  // elsewhere (PoCL, other vendors) wg128prnos. Session 15 (H200, copy 4.28 TB/s, two rounds):
  // warp32nvpipe 78.5-78.7 us (79.7-79.9% of copy) against wg128prnos' 100.5-100.7 (62.3-62.4%).
  const RowOpRun run_default = [](OpCall& call, const std::string& src, const RowPlan& plan) {
    auto device = opencl_device(call);
    if (!device) return device.status();
    if (call.problem.dtype == DType::bf16 && bf16_nv_ptx(**device))
      return run_cross_entropy(call, src, plan, &kCeWarpPipe);
    return run_cross_entropy(call, src, plan);
  };
  bool ok = register_row_op("cross_entropy", {DType::f32, DType::bf16}, /*with_stream=*/false, defaults, source,
                            [](OpCall& call, const std::string& src, const RowPlan& plan) {
                              return run_cross_entropy(call, src, plan);
                            },
                            /*with_raw=*/true,
                            {RowVariant::wg128prn, RowVariant::wg128pren, RowVariant::wg128rn, RowVariant::wg128preno,
                             RowVariant::wg128prno, RowVariant::wg128prenos, RowVariant::wg128prnos,
                             RowVariant::wg64prenos, RowVariant::wg64x2prenos},
                            run_default);
  // Session 15 (docs/opencl.md): one warp per row, its merges through shfl.sync (NVIDIA only).
  // H200, bf16 16384 x 8192, two rounds: warp32nv 104.2-104.4 us, warp32nvpipe 78.5-78.7,
  // warp32nvpipe4 80.0-80.2, wg128prnos 100.5-100.7. warp32nv: a group per 8 rows (128-register
  // cap: 2 groups per SM), the next chunk's loads in flight within the row;
  // warp32nvpipe: persistent warps (2 groups of 256 per SM under a 128-register cap: 16 warps, 64 KB
  // of loads in flight per SM, as the CUDA kernel), the next chunk in flight across rows;
  // warp32nvpipe4: 4-vector chunks (2 KB per warp), groups of 4 warps under a 96-register cap (92
  // uncapped, clang + ptxas for sm_90): 5 groups per SM, 20 warps, 40 KB in flight.
  const RowPlan fallback = row_plan(defaults.bf16);
  ok = register_ce_warp("warp32nv", CeWarpPlan{8, 8, false, 128}, source, fallback) && ok;
  ok = register_ce_warp("warp32nvpipe", kCeWarpPipe, source, fallback) && ok;
  ok = register_ce_warp("warp32nvpipe4", CeWarpPlan{4, 4, true, 96}, source, fallback) && ok;
  // Not kept: warp32nvpipe's kernel (80 registers on the H200's compiler) under an 80-register cap,
  // so the grid takes 3 groups per SM (24 warps): 94.8-95.0 us.
  return ok;
}

}  // namespace
DNNB_REGISTER(register_cross_entropy());
}  // namespace dnnb::opencl
