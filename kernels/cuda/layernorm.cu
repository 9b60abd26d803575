// CUDA layernorm over the last dim: y = (x - mean) / sqrt(var + eps) * w + b, biased variance,
// eps default 1e-5 (F.layer_norm(x, (N,), w, b, eps)).
// Kernels: kernels/cuda/norm_rows.cuh. Variants: "" (promoted from "pipe" after the H200 run of
// 2026-11-21, session 3): f16/bf16 rows of 1025..8192 columns, aligned, in persistent blocks
// that prefetch the next rows into shared memory with cp.async while normalising the current
// one (norm_pipe_kernel, 16 columns per thread in blocks of 512 since session 4); f32 and other
// shapes as "packed". "pipe32": the pipe kernel with 32 columns per thread, 3 blocks per SM (the
// default until session 4, equal to "packed" bit for bit); "pipe4": 4 blocks per SM.
// "packed" (the default from the first H200 run that day) holds rows of 1025..8192 columns as
// raw dtype vectors, 3 (f32) or 4 (16-bit) rows per SM, other lengths as "regs"; "regs" (the
// default before) holds rows up to 16K columns in registers as f32, longer ones in shared
// memory; "smem" holds every row over 1024 columns in shared memory. "packed" and "regs" agree
// bit for bit where both hold 32 columns per thread.
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

DNNB_REGISTER(register_layernorm("", NormPlan::pipe));
DNNB_REGISTER(register_layernorm("pipe32", NormPlan::pipe32));
DNNB_REGISTER(register_layernorm("pipe4", NormPlan::pipe4));
DNNB_REGISTER(register_layernorm("pipe16s3", NormPlan::pipe16s3));
DNNB_REGISTER(register_layernorm("packed", NormPlan::packed));
DNNB_REGISTER(register_layernorm("regs", NormPlan::regs));
DNNB_REGISTER(register_layernorm("smem", NormPlan::smem));

}  // namespace
}  // namespace dnnb::cuda_kernels
