// matmul_ggml on OpenCL (matmul_ggml.cl): x's rows quantised to q8_0 into device scratch
// (ggml_quantize_x, one work-item per block), then ggml_matmul: work-groups of kRows rows of w x
// kLanes items per row, up to 8 rows of x per launch row; per block the exact integer dot (the
// dp4a form through inline PTX on NVIDIA devices of compute capability 8.0 and more,
// cl_khr_integer_dot_product's packed dot where the device has it, portable integer code
// elsewhere), scaled by d_w x d_x into f32 accumulators, then a tree per row.
#include <string>

#include "kernels/opencl/matmul_ggml_cl.h"
#include "kernels/opencl/opencl_launch.h"
#include "suites/ops/matmul_ggml_desc.h"

namespace dnnb::opencl {
namespace {

constexpr int kRows = 4;    // rows of w per work-group
constexpr int kLanes = 32;  // work-items per row of w
constexpr int kRowTile = 8; // rows of x per launch row (registers: one accumulator each)

Status run_matmul_ggml(OpCall& call) {
  auto device = opencl_device(call);
  if (!device) return device.status();
  auto d = ops::matmul_ggml_desc(call.problem);
  if (!d) return d.status();
  cl_device_fp_config fp = 0;
  DNNB_CL_TRY(clGetDeviceInfo((*device)->device_id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, nullptr));
  if ((fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) == 0)
    return Status::unsupported("opencl matmul_ggml: x's q8_0 quantisation divides in f32 (amax / 127, 1 / d), and "
                               "this device has no correctly rounded divide (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)");
  const Tensor& w = call.inputs.at(0);
  const Tensor& x = call.inputs.at(1);
  const Tensor& y = call.outputs.at(0);
  if (w.strides[1] != 1 || y.strides[1] != 1)
    return Status::unsupported("opencl matmul_ggml: w's or y's columns are not unit-stride");
  const int64_t M = d->m, N = d->n, nb = d->blocks();
  if (nb > (int64_t{1} << 30)) return Status::unsupported("opencl matmul_ggml: K is past the kernels' int block index");

  const int mt = static_cast<int>(std::min<int64_t>(M, kRowTile));
  std::string extra = d->w == DType::q8_0 ? "-DGGML_Q8" : "-DGGML_Q4";
  extra += " -DGGML_MT=" + std::to_string(mt) + " -DGGML_ROWS=" + std::to_string(kRows) +
           " -DGGML_LANES=" + std::to_string(kLanes);
  if (bf16_nv_ptx(**device)) extra += " -DGGML_DP4A=1";
  else if ((*device)->has_extension("cl_khr_integer_dot_product")) extra += " -DGGML_KHR_DOT=1";
  static const std::string source = program_source({opencl_source::matmul_ggml});
  const std::string options = build_options(**device, x.dtype, extra);
  auto quantize = opencl_kernel(**device, "matmul_ggml", source, "ggml_quantize_x", options);
  if (!quantize) return quantize.status();
  auto matmul = opencl_kernel(**device, "matmul_ggml", source, "ggml_matmul", options);
  if (!matmul) return matmul.status();

  // Scratch: per block of x 32 quants, d as f32 and the quants' sum.
  const size_t blocks = static_cast<size_t>(M * nb);
  const size_t q_bytes = blocks * 32, d_bytes = blocks * sizeof(cl_float);
  auto scratch = (*device)->scratch(q_bytes + 2 * d_bytes);
  if (!scratch) return scratch.status();
  // One buffer, in 4-byte units: quants at 0, d at dx_at, sums at sx_at.
  const cl_long dx_at = static_cast<cl_long>(q_bytes / 4), sx_at = static_cast<cl_long>((q_bytes + d_bytes) / 4);

  KernelArgs qa(*quantize);
  qa.add(cl_buffer(x)).add(static_cast<cl_long>(x.offset)).add(static_cast<cl_long>(x.strides[0]));
  qa.add(static_cast<cl_long>(x.strides[1])).add(static_cast<cl_long>(M)).add(static_cast<cl_int>(nb));
  qa.add(*scratch).add(dx_at).add(sx_at);
  DNNB_TRY(qa.status());
  auto q_limit = work_group_limit(**device, *quantize, 64);
  if (!q_limit) return q_limit.status();
  const size_t q_local = *q_limit;
  const size_t q_global = (blocks + q_local - 1) / q_local * q_local;
  DNNB_TRY(enqueue(**device, *quantize, 1, &q_global, &q_local, "matmul_ggml/ggml_quantize_x"));

  const size_t local = static_cast<size_t>(kRows * kLanes);
  auto fits = row_kernel_fits(**device, *matmul, local);
  if (!fits) return fits.status();
  if (!*fits)
    return Status::unsupported("opencl matmul_ggml: ggml_matmul cannot run work-groups of " + std::to_string(local) +
                               " items on this device");
  KernelArgs ma(*matmul);
  ma.add(cl_buffer(w)).add(static_cast<cl_long>(storage_bytes(w.dtype, w.offset)));
  ma.add(static_cast<cl_long>(storage_bytes(w.dtype, w.strides[0]))).add(static_cast<cl_long>(N));
  ma.add(static_cast<cl_int>(nb)).add(*scratch).add(dx_at).add(sx_at).add(static_cast<cl_long>(M));
  ma.add(cl_buffer(y)).add(static_cast<cl_long>(y.offset)).add(static_cast<cl_long>(y.strides[0]));
  ma.add_local(local * sizeof(cl_float));
  DNNB_TRY(ma.status());
  const size_t global[2] = {static_cast<size_t>((N + kRows - 1) / kRows) * local,
                            static_cast<size_t>((M + mt - 1) / mt)};
  const size_t locals[2] = {local, 1};
  return enqueue(**device, *matmul, 2, global, locals, "matmul_ggml/ggml_matmul");
}

bool register_matmul_ggml() {
  return register_opencl("matmul_ggml", {DType::q8_0, DType::q4_0}, run_matmul_ggml);
}

}  // namespace
DNNB_REGISTER(register_matmul_ggml());
}  // namespace dnnb::opencl
