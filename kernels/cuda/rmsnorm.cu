// CUDA rmsnorm over the last dim, eps default 1e-6:
//   form=torch (default): y = x / sqrt(mean(x^2) + eps) * w        (F.rms_norm)
//   form=gemma:           y = x / sqrt(mean(x^2) + eps) * (1 + w)  (Gemma RMSNorm, all in f32)
// Kernels: kernels/cuda/norm_rows.cuh. Variants: "" (promoted from "pipe" after the H200 run of
// 2026-11-21, session 3): f16/bf16 rows of 1025..8192 columns, aligned, in persistent blocks
// that prefetch the next rows into shared memory with cp.async while normalising the current
// one (norm_pipe_kernel, 16 columns per thread in blocks of 512 since session 4); f32 and other
// shapes as "packed". "pipe32": the pipe kernel with 32 columns per thread, 3 blocks per SM (the
// default until session 4, equal to "packed" bit for bit); "pipe4": 4 blocks per SM.
// Since session 13 the default writes y with streaming stores (st.global.cs: H200, 16384 x 8192
// bf16, 143.0 us against 148.1 in two interleaved rounds); "pipe_wb" is the default before, with
// ordinary stores. (A block barrier after each row, tried the same day, was no faster: 148.3.)
// "packed" (the default from the first H200 run that day) holds rows of 1025..8192 columns as
// raw dtype vectors, 3 (f32) or 4 (16-bit) rows per SM, other lengths as "regs"; "regs" (the
// default before) holds rows up to 16K columns in registers as f32, longer ones in shared
// memory; "smem" holds every row over 1024 columns in shared memory. "packed" and "regs" agree
// bit for bit where both hold 32 columns per thread.
#include "kernels/cuda/norm_rows.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct RmsnormParams {
  float eps;
  float w_offset;
};

Result<RmsnormParams> rmsnorm_params(const Problem& problem) {
  auto eps = problem.get_double("eps", 1e-6);
  if (!eps) return eps.status();
  const std::string form = problem.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input("rmsnorm: form must be torch or gemma, got '" + form + "'");
  return RmsnormParams{static_cast<float>(*eps), form == "gemma" ? 1.f : 0.f};
}

Status run_rmsnorm(OpCall& call, NormPlan plan) {
  auto params = rmsnorm_params(call.problem);
  if (!params) return params.status();
  return run_norm_rows<false>(call, params->eps, params->w_offset, plan);
}

Status check_rmsnorm(const Problem& problem) {
  auto params = rmsnorm_params(problem);
  return params ? Status::ok() : params.status();
}

bool register_rmsnorm(const char* variant, NormPlan plan) {
  return register_cuda(
      "rmsnorm", variant, {DType::f32, DType::f16, DType::bf16},
      [plan](OpCall& call) { return run_rmsnorm(call, plan); }, check_rmsnorm);
}

DNNB_REGISTER(register_rmsnorm("", NormPlan::pipe_cs));
DNNB_REGISTER(register_rmsnorm("pipe_wb", NormPlan::pipe));
DNNB_REGISTER(register_rmsnorm("pipe32", NormPlan::pipe32));
DNNB_REGISTER(register_rmsnorm("pipe4", NormPlan::pipe4));
DNNB_REGISTER(register_rmsnorm("pipe16s3", NormPlan::pipe16s3));
DNNB_REGISTER(register_rmsnorm("packed", NormPlan::packed));
DNNB_REGISTER(register_rmsnorm("regs", NormPlan::regs));
DNNB_REGISTER(register_rmsnorm("smem", NormPlan::smem));

}  // namespace
}  // namespace dnnb::cuda_kernels
