// CUDA layernorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b, biased variance,
// eps default 1e-5 (F.layer_norm(x, (N,), w, b, eps)).
// Kernels and the statistics' arithmetic (shifted data, corrected two-pass variance):
// kernels/cuda/norm_rows.cuh. y is written with ordinary stores: streaming stores, which help
// rmsnorm's pipe kernel, made this one slower.
#include "kernels/cuda/norm_rows.cuh"

namespace dnnb::cuda_kernels {
namespace {

Status run_layernorm(OpCall& call) {
  auto eps = call.problem.get_double("eps", 1e-5);
  if (!eps) return eps.status();
  return run_norm_rows<true>(call, static_cast<float>(*eps), 0.f, /*stream_stores=*/false);
}

Status check_layernorm(const Problem& problem) {
  auto eps = problem.get_double("eps", 1e-5);
  return eps ? Status::ok() : eps.status();
}

DNNB_REGISTER(register_cuda("layernorm", "", "", {DType::f32, DType::f16, DType::bf16},
                            run_layernorm, check_layernorm));

}  // namespace
}  // namespace dnnb::cuda_kernels
