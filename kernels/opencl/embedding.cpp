// embedding on OpenCL: y[t] = table[ids[t]], a bit-exact gather of rows (embedding.cl, in the
// layout-copy program). ids are i64 or i32. An id outside [0, V) is never read through: the
// kernel records the lowest such position in a device flag, a one-item kernel adds that
// position's id, and the 16 bytes are read into host memory without waiting (the queue is in
// order). A check deferred to the device's next synchronize() (core/deferred_checks.h) reports
// bad input naming the position and the id, as the CUDA embedding does: the launch itself never
// waits for the device, so back-to-back launches (bench, a model's step) keep the queue full.
#include <climits>
#include <memory>
#include <string>

#include "kernels/opencl/embedding_ids.h"
#include "kernels/opencl/layout_copy.h"
#include "suites/ops/layout_desc.h"

namespace dnnb::opencl {
namespace {

Status run_embedding(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  DNNB_TRY(expect_io(call, 2, 1, "inputs (ids, table) and one output (y)"));
  auto d = ops::embedding_desc(call.problem);
  if (!d) return d.status();
  const Tensor& ids = call.inputs[0];
  const Tensor& table = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (ids.dtype != DType::i64 && ids.dtype != DType::i32)
    return Status::unsupported(std::string("opencl embedding: ids of ") + dtype_name(ids.dtype) + " (i64 or i32 only)");
  if (table.dtype != y.dtype) return Status::bad_input("embedding: table and y must share a dtype");
  if (ids.ndim() != 1 || table.ndim() != 2 || y.ndim() != 2)
    return Status::bad_input("embedding: ids " + ids.describe() + ", table " + table.describe() + ", y " +
                             y.describe() + " are not [T], [V, D], [T, D]");
  if (d->tokens >= INT_MAX)
    return Status::unsupported("opencl embedding: the bad-id flag holds positions below 2^31 - 1, not " +
                               std::to_string(d->tokens) + " tokens");
  if (y.numel() == 0) return Status::ok();
  auto kernel = layout_kernel(**device, table.dtype, "embedding_rows");
  if (!kernel) return kernel.status();
  auto flag = (*device)->scratch(16);  // int position, int pad, long id
  if (!flag) return flag.status();
  auto bad_id = layout_kernel(**device, table.dtype, "embedding_bad_id");
  if (!bad_id) return bad_id.status();
  const cl_int none = INT_MAX;
  cl_command_queue queue = (*device)->queue();
  DNNB_CL_TRY(clEnqueueFillBuffer(queue, *flag, &none, sizeof(none), 0, sizeof(none), 0, nullptr, nullptr));
  const cl_int ids_i32 = ids.dtype == DType::i32;
  KernelArgs args(*kernel);
  args.add(cl_buffer(ids)).add(cl_long{ids.offset}).add(cl_long{ids.strides[0]}).add(ids_i32).add(cl_long{d->vocab});
  args.add(cl_buffer(table)).add(cl_long{table.offset}).add(cl_long{table.strides[0]}).add(cl_long{table.strides[1]});
  args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.strides[0]}).add(cl_long{y.strides[1]});
  args.add(cl_long{d->tokens}).add(cl_long{d->dim}).add(*flag);
  DNNB_TRY(args.status());
  DNNB_TRY(launch_elementwise_rows(**device, *kernel, d->tokens, d->dim, "embedding/embedding_rows",
                                   layout_vector_width(table.dtype)));
  return report_bad_ids(call, **device, *bad_id, ids, *flag, d->vocab, "embedding");
}

bool register_embedding() { return register_opencl("embedding", float_dtypes(), run_embedding); }

}  // namespace
DNNB_REGISTER(register_embedding());
}  // namespace dnnb::opencl
