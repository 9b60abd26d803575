// matmul_f8 on OpenCL (matmul_f8.cl): 64 x 64 tiles of y per work-group of 16 x 16; a and b
// (e4m3fn or e5m2, any strides) decoded exactly to f32 in local memory, f32 FMA accumulation,
// then scale_a * scale_b and one rounding to y's dtype (bf16, f16 or f32; prelude.cl's store).
#include <algorithm>

#include "kernels/opencl/matmul_f8_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "kernels/opencl/program_dump.h"
#include "suites/ops/matmul_q_desc.h"

namespace dnnb::opencl {
namespace {

constexpr int64_t kTile = 64;

Status run_matmul_f8(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  if (call.inputs.size() != 4 || call.outputs.size() != 1)
    return Status::bad_input("opencl matmul_f8: expects inputs (a, b, scale_a, scale_b) and one output (y)");
  auto d = ops::matmul_f8_desc(call.problem);
  if (!d) return d.status();
  const Tensor &a = call.inputs[0], &b = call.inputs[1], &sa = call.inputs[2], &sb = call.inputs[3];
  const Tensor& y = call.outputs[0];
  if (a.dtype != d->a || b.dtype != d->b || y.dtype != d->y || sa.dtype != DType::f32 || sb.dtype != DType::f32)
    return Status::bad_input("opencl matmul_f8: operand dtypes differ from the problem's " + call.problem.to_string());
  if (a.ndim() != 2 || b.ndim() != 2 || y.ndim() != 2 || y.strides[1] != 1)
    return Status::unsupported("opencl matmul_f8: 2-D a, b and y with unit-stride columns of y");
  const bool row = d->scale == ops::F8Scale::row;
  const std::string extra = "-DMM_A_FMT=" + std::string(d->a == DType::f8_e5m2 ? "1" : "0") +
                            " -DMM_B_FMT=" + std::string(d->b == DType::f8_e5m2 ? "1" : "0");
  static const std::string source = program_source({opencl_source::matmul_f8});
  auto kernel = opencl_kernel(**device, "matmul_f8", source, "matmul_f8_tiles", build_options(**device, y.dtype, extra));
  if (!kernel) return kernel.status();
  KernelArgs args(*kernel);
  args.add(cl_buffer(a)).add(cl_long{a.offset}).add(cl_long{a.strides[0]}).add(cl_long{a.strides[1]});
  args.add(cl_buffer(b)).add(cl_long{b.offset}).add(cl_long{b.strides[0]}).add(cl_long{b.strides[1]});
  // Row scales: scale_a [M, 1] steps by its row stride, scale_b [1, N] by its column stride.
  args.add(cl_buffer(sa)).add(cl_long{sa.offset}).add(cl_long{row ? sa.strides[0] : 0});
  args.add(cl_buffer(sb)).add(cl_long{sb.offset}).add(cl_long{row ? sb.strides[1] : 0});
  args.add(cl_buffer(y)).add(cl_long{y.offset}).add(cl_long{y.strides[0]});
  args.add(cl_long{d->gemm.m}).add(cl_long{d->gemm.n}).add(cl_long{d->gemm.k});
  DNNB_TRY(args.status());
  const size_t global[2] = {static_cast<size_t>((d->gemm.n + kTile - 1) / kTile) * 16,
                            static_cast<size_t>((d->gemm.m + kTile - 1) / kTile) * 16};
  const size_t local[2] = {16, 16};
  return enqueue(**device, *kernel, 2, global, local, "matmul_f8/matmul_f8_tiles");
}

}  // namespace

DNNB_REGISTER(register_opencl("matmul_f8", {DType::f8_e4m3fn}, run_matmul_f8));

}  // namespace dnnb::opencl
