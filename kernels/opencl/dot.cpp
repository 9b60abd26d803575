// dot on OpenCL: y[...] = sum over the last dim of a * b (dot.cl). One work-group per row, or,
// for few long rows, several per row and a fixed-order combine (dot_finish). Any strides; y of
// the problem dtype or f32.
#include <algorithm>
#include <string>

#include "kernels/opencl/gemm.h"

namespace dnnb::opencl {
namespace {

constexpr size_t kWorkGroup = 256;
// Enough work-groups in flight for a GPU when rows are few: a row is split until rows x
// segments reaches this, keeping at least kMinSegment columns per segment. Fixed numbers (not
// the device's), so a problem sums in the same order on every device.
constexpr int64_t kTargetGroups = 256;
constexpr int64_t kMinSegment = 16 * static_cast<int64_t>(kWorkGroup);
constexpr size_t kMaxGroups = 65535;  // grid dims 1 (rows of dot_rows) and 0 (dot_finish); loops cover the rest

Status run_dot(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("dot: expects inputs (a, b) and one output (y)");
  const DType dtype = call.problem.dtype;
  const Tensor& a = call.inputs[0];
  const Tensor& b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (a.dtype != dtype || b.dtype != dtype)
    return Status::unsupported("opencl dot: a and b must be of the problem dtype " + std::string(dtype_name(dtype)));
  if (y.dtype != dtype && y.dtype != DType::f32)
    return Status::unsupported("opencl dot: output y of " + std::string(dtype_name(y.dtype)) + " (the kernel writes " +
                               dtype_name(dtype) + " or f32)");
  if (a.ndim() == 0 || a.shape != b.shape)
    return Status::bad_input("dot: a " + a.describe() + " and b " + b.describe() + " must have one shape of >= 1 dim");
  auto ar = cl_rows(a);
  if (!ar) return ar.status();
  auto br = cl_rows(b);
  if (!br) return br.status();
  auto yr = cl_rows(with_unit_last_dim(y));
  if (!yr) return yr.status();
  if (yr->rows != ar->rows)
    return Status::bad_input("dot: y " + y.describe() + " is not a's shape without its last dim");
  const int64_t rows = ar->rows, k = ar->cols;
  if (rows == 0) return Status::ok();

  int64_t groups =
      std::max<int64_t>(1, std::min((kTargetGroups + rows - 1) / rows, (k + kMinSegment - 1) / kMinSegment));
  int64_t seg = (k + groups - 1) / groups;
  seg = (seg + 3) / 4 * 4;  // whole 4-element vectors per segment
  groups = (k + seg - 1) / seg;
  cl_mem partial = cl_buffer(y);  // unused when a row is one segment
  if (groups > 1) {
    auto scratch = (*device)->scratch(static_cast<size_t>(rows * groups) * sizeof(cl_float));
    if (!scratch) return scratch.status();
    partial = *scratch;
  }
  const std::string options = build_options(**device, dtype);
  const cl_int y_f32 = y.dtype == DType::f32 && dtype != DType::f32;
  auto kernel = opencl_kernel(**device, kProductProgram, product_source(), "dot_rows", options);
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(a)).add(*ar).add(cl_buffer(b)).add(*br).add(cl_buffer(y)).add(*yr).add(y_f32);
  args.add(cl_long{groups}).add(cl_long{seg}).add(partial).add_local(kWorkGroup * sizeof(cl_float));
  DNNB_TRY(args.status());
  const size_t global[2] = {static_cast<size_t>(groups) * kWorkGroup, std::min(static_cast<size_t>(rows), kMaxGroups)};
  const size_t local[2] = {kWorkGroup, 1};
  DNNB_TRY(enqueue(**device, *kernel, 2, global, local, "dot/dot_rows"));
  if (groups == 1) return Status::ok();

  auto finish = opencl_kernel(**device, kProductProgram, product_source(), "dot_finish", options);
  if (!finish) return finish.status();
  KernelArgs finish_args(*finish);
  finish_args.add(partial).add(cl_long{groups}).add(cl_long{rows}).add(cl_buffer(y)).add(*yr).add(y_f32);
  finish_args.add_local(kWorkGroup * sizeof(cl_float));
  DNNB_TRY(finish_args.status());
  const size_t finish_global = std::min(static_cast<size_t>(rows), kMaxGroups) * kWorkGroup;
  return enqueue(**device, *finish, 1, &finish_global, &kWorkGroup, "dot/dot_finish");
}

bool register_dot() { return register_opencl("dot", float_dtypes(), run_dot); }

}  // namespace
DNNB_REGISTER(register_dot());
}  // namespace dnnb::opencl
