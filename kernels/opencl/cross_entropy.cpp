// cross_entropy (mean over kept rows, ignore_index) on OpenCL: cross_entropy.cl. Per-row
// losses go to the device's scratch buffer; a one-work-group kernel reduces them in a fixed
// order, so the loss is deterministic.
#include "kernels/opencl/cross_entropy_cl.h"
#include "kernels/opencl/logsumexp_body_cl.h"
#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {
namespace {

Status run_cross_entropy(OpCall& call, const std::string& source) {
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
  auto partial = (*device)->scratch(static_cast<size_t>(std::max<int64_t>(rows, 1)) * 2 * sizeof(cl_float));
  if (!partial) return partial.status();
  const std::string options = build_options(**device, call.problem.dtype);

  if (rows > 0) {
    auto kernel = (*device)->kernel("cross_entropy", source, "ce_rows", options);
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
  auto finish = (*device)->kernel("cross_entropy", source, "ce_finish", options);
  if (!finish) return finish.status();
  auto limit = work_group_limit(**device, *finish, 256);
  if (!limit) return limit.status();
  KernelArgs args(*finish);
  args.add(*partial).add(cl_long{rows}).add(cl_buffer(loss)).add(cl_long{loss.offset});
  args.add_local(*limit * sizeof(cl_float));
  DNNB_TRY(args.status());
  const size_t global = *limit;
  return enqueue(**device, *finish, 1, &global, &global, "cross_entropy/ce_finish");
}

bool register_cross_entropy() {
  std::string source = program_source({opencl_source::logsumexp_body, opencl_source::cross_entropy});
  return register_opencl("cross_entropy", {DType::f32, DType::bf16},
                         [source](OpCall& call) { return run_cross_entropy(call, source); });
}

}  // namespace
DNNB_REGISTER(register_cross_entropy());
}  // namespace dnnb::opencl
