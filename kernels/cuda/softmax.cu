// CUDA softmax over the last dim: z = scale * (softcap ? c tanh(x / c) : x) + mask,
// y = exp(z - max z) / sum; a fully masked (all -inf) row gives 0. The mask is broadcast to x's
// shape (stride-0 dims) and may hold -inf.
// Kernels: kernels/cuda/softmax_rows.cuh (the persistent prefetching kernel for rows of
// 1025..8192 columns, register, occupancy and streaming kernels for the rest). The alternative
// "expf" computes every exp with expf, also for f16/bf16 outputs.
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

Status run_softmax(OpCall& call, SoftmaxExp exp) {
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
    return launch_softmax_rows<T>(**device, a, exp);
  });
}

Status check_softmax(const Problem& problem) {
  auto params = softmax_params(problem);
  return params ? Status::ok() : params.status();
}

DNNB_REGISTER(register_cuda(
    "softmax", "", "", {DType::f32, DType::f16, DType::bf16},
    [](OpCall& call) { return run_softmax(call, SoftmaxExp::fast16); }, check_softmax));
DNNB_REGISTER(register_cuda(
    "softmax", "expf",
    "f16/bf16 outputs computed with the accurate expf (the default's 2-instruction exp, within "
    "2^-22 relative, can flip a near-tie rounding of the output), at about twice the default's "
    "time on rows of 1025..8192 columns.",
    {DType::f16, DType::bf16}, [](OpCall& call) { return run_softmax(call, SoftmaxExp::expf); },
    check_softmax));

}  // namespace
}  // namespace dnnb::cuda_kernels
