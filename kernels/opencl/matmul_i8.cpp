// matmul_i8 on OpenCL (matmul_i8.cl): 64 x 64 tiles of y per work-group of 16 x 16, a and b read
// through their strides, exact int32 sums. The 4-byte dot is dp4a through inline PTX on NVIDIA
// devices where prelude.cl's PTX tier applies (bf16_nv_ptx: compute capability 8.0 and more),
// cl_khr_integer_dot_product's built-in where the device has the extension, portable integer
// code elsewhere.
#include <algorithm>

#include "kernels/opencl/matmul_i8_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/program_dump.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::opencl {
namespace {

constexpr int64_t kTile = 64;

Status run_matmul_i8(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("opencl matmul_i8: expects inputs (a, b) and one output (y)");
  auto d = ops::matmul_i8_desc(call.problem);
  if (!d) return d.status();
  const Tensor &a = call.inputs[0], &b = call.inputs[1];
  const Tensor& y = call.outputs[0];
  if (a.dtype != DType::i8 || b.dtype != DType::i8 || y.dtype != DType::i32)
    return Status::bad_input("opencl matmul_i8: a and b must be i8 and y i32");
  if (a.ndim() != 2 || b.ndim() != 2 || y.ndim() != 2 || y.strides[1] != 1)
    return Status::unsupported("opencl matmul_i8: 2-D a, b and y with unit-stride columns of y");
  const int dot = bf16_nv_ptx(**device) ? 2 : (**device).has_extension("cl_khr_integer_dot_product") ? 1 : 0;
  static const std::string source = program_source({opencl_source::matmul_i8});
  auto kernel = opencl_kernel(**device, "matmul_i8", source, "matmul_i8_tiles",
                              build_options(**device, DType::f32, "-DMM_DOT=" + std::to_string(dot)));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(a)).add(cl_long{a.offset}).add(cl_long{a.strides[0]}).add(cl_long{a.strides[1]});
  args.add(cl_buffer(b)).add(cl_long{b.offset}).add(cl_long{b.strides[0]}).add(cl_long{b.strides[1]});
  args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.strides[0]});
  args.add(cl_long{d->m}).add(cl_long{d->n}).add(cl_long{d->k});
  DNNB_TRY(args.status());
  const size_t global[2] = {static_cast<size_t>((d->n + kTile - 1) / kTile) * 16,
                            static_cast<size_t>((d->m + kTile - 1) / kTile) * 16};
  const size_t local[2] = {16, 16};
  return enqueue(**device, *kernel, 2, global, local, "matmul_i8/matmul_i8_tiles");
}

}  // namespace

DNNB_REGISTER(register_opencl("matmul_i8", {DType::i8}, run_matmul_i8));

}  // namespace dnnb::opencl
