// The backward of layernorm and rmsnorm on OpenCL (norm_bwd.cl), shared by layernorm_bwd.cpp
// and rmsnorm_bwd.cpp: norm_bwd_rows over a fixed number of row groups (kNormBwdGroups, not the
// device's count, so a problem sums in the same order on every device), each group's column
// sums in local memory when they fit in half of it, then norm_bwd_columns.
#pragma once
#include <algorithm>
#include <string>

#include "kernels/opencl/norm_bwd_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/program_dump.h"

namespace dnnb::opencl {

inline constexpr int64_t kNormBwdGroups = 256;
inline constexpr size_t kNormBwdWorkGroup = 256;

// inputs x, w, dy, [mean,] rstd; outputs dx, dw, [db] (docs/ops-family1.md).
inline Status run_norm_bwd(OpCall& call, bool centered) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  const std::string& op = call.problem.op;
  const std::string form = call.problem.get("form", "torch");
  if (form != "torch" && form != "gemma") return Status::bad_input(op + ": form=" + form + " is not torch or gemma");
  const size_t n_inputs = centered ? 5 : 4, n_outputs = centered ? 3 : 2;
  if (call.inputs.size() != n_inputs || call.outputs.size() != n_outputs)
    return Status::bad_input(op + ": expected " + std::to_string(n_inputs) + " inputs and " + std::to_string(n_outputs) +
                             " outputs");
  const DType dtype = call.problem.dtype;
  const Tensor& rstd = call.inputs[n_inputs - 1];
  const Tensor& mean = centered ? call.inputs[3] : rstd;  // rmsnorm has none: rstd stands in
  if (rstd.dtype != DType::f32 || mean.dtype != DType::f32)
    return Status::bad_input(op + ": the statistics must be f32");
  auto xr = cl_rows(call.inputs[0]);
  if (!xr) return xr.status();
  auto wr = cl_rows(call.inputs[1]);
  if (!wr) return wr.status();
  auto dyr = cl_rows(call.inputs[2]);
  if (!dyr) return dyr.status();
  auto mr = cl_rows(mean);
  if (!mr) return mr.status();
  auto rr = cl_rows(rstd);
  if (!rr) return rr.status();
  auto dxr = cl_rows(call.outputs[0]);
  if (!dxr) return dxr.status();
  const Tensor& dw = call.outputs[1];
  const Tensor& db = centered ? call.outputs[2] : call.outputs[1];
  const int64_t rows = xr->rows, cols = xr->cols;
  if (dyr->rows != rows || dyr->cols != cols || dxr->rows != rows || dxr->cols != cols || rr->rows != rows ||
      mr->rows != rows || wr->cols != cols || dw.ndim() != 1 || dw.shape[0] != cols || db.ndim() != 1 ||
      db.shape[0] != cols)
    return Status::bad_input(op + ": expected x, dy, dx [..., N], w, dw [N] and one statistic per row");
  if (rows == 0 || cols == 0) return Status::ok();

  const int64_t n_sums = centered ? 2 : 1;
  const int64_t groups = std::min(rows, kNormBwdGroups);
  const int64_t rows_per_group = (rows + groups - 1) / groups;
  const int64_t used_groups = (rows + rows_per_group - 1) / rows_per_group;
  auto parts = (*device)->scratch(static_cast<size_t>(used_groups * n_sums * cols) * sizeof(cl_float));
  if (!parts) return parts.status();
  // The group's sums in local memory when they fit in half of it at the largest work-group.
  const int64_t span = static_cast<int64_t>(kNormBwdWorkGroup) * 4;
  const size_t local_bytes = static_cast<size_t>(n_sums * ((cols + span - 1) / span) * span) * sizeof(cl_float);
  const bool in_local = local_bytes + kNormBwdWorkGroup * sizeof(cl_float) <= (*device)->local_mem_size() / 2;
  const std::string source = program_source({opencl_source::norm_bwd});
  const std::string options = build_options(**device, dtype, in_local ? "-DDNNB_NB_LOCAL=1" : "");
  auto kernel = opencl_kernel(**device, "norm_bwd", source, "norm_bwd_rows", options);
  if (!kernel) return kernel.status();
  auto wg = work_group_limit(**device, *kernel, kNormBwdWorkGroup);
  if (!wg) return wg.status();
  const int64_t item_span = static_cast<int64_t>(*wg) * 4;
  const size_t sums_bytes =
      in_local ? static_cast<size_t>(n_sums * ((cols + item_span - 1) / item_span) * item_span) * sizeof(cl_float) : 4;
  KernelArgs args(*kernel);
  args.add(cl_buffer(call.inputs[0])).add(*xr).add(cl_buffer(call.inputs[1])).add(*wr);
  args.add(cl_buffer(call.inputs[2])).add(*dyr).add(cl_buffer(mean)).add(*mr).add(cl_buffer(rstd)).add(*rr);
  args.add(cl_buffer(call.outputs[0])).add(*dxr).add(*parts).add(cl_long{rows_per_group});
  args.add(cl_int{centered ? 1 : 0}).add(cl_float{form == "gemma" ? 1.0f : 0.0f});
  args.add_local(*wg * sizeof(cl_float)).add_local(sums_bytes);
  DNNB_TRY(args.status());
  const size_t global = static_cast<size_t>(used_groups) * *wg;
  DNNB_TRY(enqueue(**device, *kernel, 1, &global, &*wg, op + "/norm_bwd_rows"));

  auto columns = opencl_kernel(**device, "norm_bwd", source, "norm_bwd_columns", options);
  if (!columns) return columns.status();
  KernelArgs cargs(*columns);
  cargs.add(*parts).add(cl_long{used_groups}).add(cl_long{n_sums}).add(cl_long{cols});
  cargs.add(cl_buffer(dw)).add(cl_long{dw.offset}).add(cl_long{dw.strides[0]});
  cargs.add(cl_buffer(db)).add(cl_long{db.offset}).add(cl_long{db.strides[0]});
  DNNB_TRY(cargs.status());
  const size_t column_local[2] = {64, 1};
  const size_t column_global[2] = {static_cast<size_t>((cols + 63) / 64 * 64), static_cast<size_t>(n_sums)};
  return enqueue(**device, *columns, 2, column_global, column_local, op + "/norm_bwd_columns");
}

}  // namespace dnnb::opencl
