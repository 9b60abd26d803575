// The bad-id report of the OpenCL embedding and embedding_bwd (embedding_ids.h).
#include "kernels/opencl/embedding_ids.h"

#include <climits>
#include <memory>

#include "core/deferred_checks.h"

namespace dnnb::opencl {

Status report_bad_ids(OpCall& call, OpenCLDevice& device, cl_kernel bad_id, const Tensor& ids, cl_mem flag,
                      int64_t vocab, const std::string& op) {
  const cl_int ids_i32 = ids.dtype == DType::i32;
  KernelArgs args(bad_id);
  args.add(cl_buffer(ids)).add(cl_long{ids.offset}).add(cl_long{ids.strides[0]}).add(ids_i32).add(flag);
  DNNB_TRY(args.status());
  const size_t one = 1;
  DNNB_TRY(enqueue(device, bad_id, 1, &one, &one, op + "/bad_id"));
  // Bound the pending reports (a bench loop never synchronises).
  constexpr size_t kMaxPending = 1024;
  if (deferred_check_count(device) >= kMaxPending) DNNB_TRY(call.device.synchronize());
  struct Report {
    cl_int position, pad;
    cl_long id;
  };
  static_assert(sizeof(Report) == 16, "the flag's 16 bytes");
  auto report = std::make_shared<Report>();
  DNNB_CL_TRY(clEnqueueReadBuffer(device.queue(), flag, CL_FALSE, 0, sizeof(Report), report.get(), 0, nullptr, nullptr));
  defer_until_synchronize(device, [report, vocab, op]() -> Status {
    if (report->position == INT_MAX) return Status::ok();
    return Status::bad_input(op + ": ids[" + std::to_string(report->position) + "] = " + std::to_string(report->id) +
                             " is outside the table's " + std::to_string(vocab) + " rows");
  });
  return Status::ok();
}

}  // namespace dnnb::opencl
