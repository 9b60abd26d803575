// CUDA softmax over the last dim: z = scale * (softcap ? c tanh(x / c) : x) + mask,
// y = exp(z - max z) / sum; a fully masked (all -inf) row gives 0. The mask is broadcast to x's
// shape (stride-0 dims) and may hold -inf.
// Kernels: kernels/cuda/softmax_rows.cuh. Variants (rows placed by SoftmaxPlan):
//   ""         rows of 1025..8192 columns (aligned, cols % 16 bytes == 0) in persistent blocks
//              that prefetch the next rows into shared memory with cp.async while reducing the
//              current one (softmax_pipe_kernel: f32 equal to "occ" bit for bit; f16/bf16
//              with the scale folded into the exp when there is no mask or softcap, and 16
//              columns per thread in blocks of 512, 2 stages; f32 4 stages); other shapes as
//              "occ" (promoted from "pipe" after the H200 run of 2026-11-21, session 3: f32 297
//              us against 435, f16/bf16 161-163 against 283-287 at 16384 x 8192; session 4:
//              16-bit 148-152; session 6: 16-bit 142, f32 270); on devices with DRAM under
//              4 TB/s (the H100) f16/bf16 take "pipe4"'s shape (softmax_plan.h);
//   "pipe32"   the pipe kernel with 32 columns per thread, 3 blocks per SM, for every dtype
//              (the 16-bit default until session 4, f32's until session 6); "pipe4" with 4
//              blocks per SM; "pipe16" with 16 columns per thread and 2 stages for every dtype;
//              "pipe16s3", "pipe16s4" with 3 and 4 stages (row_pipe.cuh, RowPipeShape);
//   "occ"      rows of 1025..8192 columns in registers with 3 rows per SM, f16/bf16 with the
//              2-instruction exp (ex2.approx, error bound in cuda_common.cuh), f32 with expf;
//              other lengths as "reg2" (the default from the first H200 run of 2026-11-21);
//   "occ_expf" as "occ" with expf for every dtype (the earlier 16-bit numerics);
//   "reg2"     the default before 2026-11-21: rows up to 16K columns in registers (2 rows per SM
//              at 8192 columns), up to 51200 in shared memory, else streamed;
//   "smem"     rows over 1024 columns in shared memory (more rows per SM than registers allow);
//   "two_pass" always streamed: statistics pass, then a write pass that re-reads x.
// All but two_pass read x once and write y once; two_pass measures what that buys.
#include "kernels/cuda/softmax_rows.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct SoftmaxParams {
  float scale;
  float softcap;
};

Result<SoftmaxParams> softmax_params(const Problem& problem) {
  auto scale = problem.get_double("scale", 1.0);
  if (!scale) return scale.status();
  auto softcap = problem.get_double("softcap", 0.0);
  if (!softcap) return softcap.status();
  if (*softcap < 0) return Status::bad_input("softmax: softcap must be >= 0 (0 = off)");
  return SoftmaxParams{static_cast<float>(*scale), static_cast<float>(*softcap)};
}

Status run_softmax(OpCall& call, SoftmaxPlan plan) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto params = softmax_params(call.problem);
  if (!params) return params.status();
  if (call.inputs.empty() || call.inputs.size() > 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda softmax: expected inputs x [, mask] and output y");
  const DType dtype = call.problem.dtype;
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(x, dtype, "x"));
  DNNB_TRY(expect_tensor(y, dtype, "y"));
  if (y.shape != x.shape) return Status::bad_input("cuda softmax: y must have x's shape");
  std::optional<Tensor> mask;
  if (call.inputs.size() == 2) {
    DNNB_TRY(expect_tensor(call.inputs[1], dtype, "mask"));
    auto broadcast = call.inputs[1].broadcast_to(x.shape);
    if (!broadcast) return broadcast.status();
    mask = *broadcast;
  }
  return dispatch_float(dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    SoftmaxArgs<T> a;
    auto xv = make_row_view<T>(x);
    if (!xv) return xv.status();
    auto yv = make_row_view<T>(y);
    if (!yv) return yv.status();
    a.x = *xv;
    a.y = *yv;
    if (mask) {
      auto mv = make_row_view<T>(*mask);
      if (!mv) return mv.status();
      a.mask = *mv;
    }
    a.rows = xv->ri.rows;
    a.cols = xv->ri.cols;
    a.scale = params->scale;
    a.softcap = params->softcap;
    a.inv_softcap = params->softcap > 0.f ? 1.f / params->softcap : 0.f;
    return launch_softmax_rows<T>(**device, a, plan);
  });
}

Status check_softmax(const Problem& problem) {
  auto params = softmax_params(problem);
  return params ? Status::ok() : params.status();
}

bool register_softmax(const char* variant, SoftmaxPlan plan) {
  return register_cuda(
      "softmax", variant, {DType::f32, DType::f16, DType::bf16},
      [plan](OpCall& call) { return run_softmax(call, plan); }, check_softmax);
}

DNNB_REGISTER(register_softmax("", SoftmaxPlan::pipe));
DNNB_REGISTER(register_softmax("pipe32", SoftmaxPlan::pipe32));
DNNB_REGISTER(register_softmax("pipe4", SoftmaxPlan::pipe4));
DNNB_REGISTER(register_softmax("pipe16", SoftmaxPlan::pipe16));
DNNB_REGISTER(register_softmax("pipe16s3", SoftmaxPlan::pipe16s3));
DNNB_REGISTER(register_softmax("pipe16s4", SoftmaxPlan::pipe16s4));
DNNB_REGISTER(register_softmax("occ", SoftmaxPlan::occ));
DNNB_REGISTER(register_softmax("occ_expf", SoftmaxPlan::occ_expf));
DNNB_REGISTER(register_softmax("reg2", SoftmaxPlan::reg2));
DNNB_REGISTER(register_softmax("smem", SoftmaxPlan::smem));
DNNB_REGISTER(register_softmax("two_pass", SoftmaxPlan::two_pass));

}  // namespace
}  // namespace dnnb::cuda_kernels
