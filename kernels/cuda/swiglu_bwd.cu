// CUDA swiglu_bwd: da = dy b silu'(a), db = dy silu(a), with s = sigmoid(a) and 1 - s from one
// exp (glu_bwd.cuh, sigmoid_pair): silu(a) = a s, silu'(a) = s (1 + a (1 - s)), the inner sum
// one fmaf (no rounding of a (1 - s) before it cancels near silu's minimum at a = -1.28).
// Kernels and launch shapes: kernels/cuda/glu_bwd.cuh; f32 math, each output rounded once.
#include "kernels/cuda/glu_bwd.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct SwiGluBwdOp {
  __device__ void operator()(float a, float b, float dy, float& da, float& db) const {
    float one_minus_s;
    const float s = sigmoid_pair(a, one_minus_s);
    db = dy * (a * s);
    da = dy * b * (s * fmaf(a, one_minus_s, 1.f));
  }
};

Status run_swiglu_bwd(OpCall& call) { return run_glu_bwd(call, SwiGluBwdOp{}); }

DNNB_REGISTER(register_cuda("swiglu_bwd", "", "", {DType::f32, DType::f16, DType::bf16}, run_swiglu_bwd));

}  // namespace
}  // namespace dnnb::cuda_kernels
