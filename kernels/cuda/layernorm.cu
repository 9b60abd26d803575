// CUDA layernorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b, biased variance,
// eps default 1e-5 (F.layer_norm(x, (N,), w, b, eps)).
// Kernels: kernels/cuda/norm_rows.cuh. Variants: "" holds rows of 1025..8192 columns as raw
// dtype vectors, 3 (f32) or 4 (16-bit) rows per SM (promoted from "packed" after the H200 run of
// 2026-11-21), other lengths as "regs"; "regs" (the previous default) holds rows up to 16K
// columns in registers as f32, longer ones in shared memory; "smem" holds every row over 1024
// columns in shared memory. "" and "regs" agree bit for bit where both hold 32 columns per thread.
// "pipe" (f16/bf16, 1025..8192 columns, aligned rows): persistent blocks that prefetch the next
// rows into shared memory with cp.async while normalising the current one (norm_pipe_kernel,
// equal to "" bit for bit); f32 and other shapes as "".
#include "kernels/cuda/norm_rows.cuh"

namespace dnnb::cuda_kernels {
namespace {

Status run_layernorm(OpCall& call, NormPlan plan) {
  auto eps = call.problem.get_double("eps", 1e-5);
  if (!eps) return eps.status();
  return run_norm_rows<true>(call, static_cast<float>(*eps), 0.f, plan);
}

Status check_layernorm(const Problem& problem) {
  auto eps = problem.get_double("eps", 1e-5);
  return eps ? Status::ok() : eps.status();
}

bool register_layernorm(const char* variant, NormPlan plan) {
  return register_cuda(
      "layernorm", variant, {DType::f32, DType::f16, DType::bf16},
      [plan](OpCall& call) { return run_layernorm(call, plan); }, check_layernorm);
}

DNNB_REGISTER(register_layernorm("", NormPlan::best));
DNNB_REGISTER(register_layernorm("regs", NormPlan::regs));
DNNB_REGISTER(register_layernorm("smem", NormPlan::smem));
DNNB_REGISTER(register_layernorm("pipe", NormPlan::pipe));

}  // namespace
}  // namespace dnnb::cuda_kernels
