// CUDA geglu_bwd: da = dy b g'(a), db = dy g(a), g = gelu_tanh. With k = sqrt(2/pi),
// c = 0.044715, u = k (a + c a^3) and s = sigmoid(2u) = (1 + tanh u) / 2:
//   g(a) = a s,  g'(a) = s (1 + a (1 - s) (2k + 6kc a^2))  (1 - tanh^2 u = 4 s (1 - s)),
// s and 1 - s from one exp without cancellation (glu_bwd.cuh, sigmoid_pair), where torch's
// 1 + tanh and 1 - tanh^2 cancel for |a| beyond ~3; the sum with 1 is one fmaf.
// Kernels and launch shapes: kernels/cuda/glu_bwd.cuh; f32 math, each output rounded once.
#include "kernels/cuda/glu_bwd.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct GeGluBwdOp {
  __device__ void operator()(float a, float b, float dy, float& da, float& db) const {
    const float a2 = a * a;
    const float two_u = a * fmaf(0.07135481627260025f, a2, 1.5957691216057308f);  // 2k c, 2k
    float one_minus_s;
    const float s = sigmoid_pair(two_u, one_minus_s);
    const float w = fmaf(0.21406444881780076f, a2, 1.5957691216057308f);  // 6kc, 2k
    db = dy * (a * s);
    da = dy * b * (s * fmaf(a * one_minus_s, w, 1.f));
  }
};

Status run_geglu_bwd(OpCall& call) { return run_glu_bwd(call, GeGluBwdOp{}); }

DNNB_REGISTER(register_cuda("geglu_bwd", "", "", {DType::f32, DType::f16, DType::bf16}, run_geglu_bwd));

}  // namespace
}  // namespace dnnb::cuda_kernels
