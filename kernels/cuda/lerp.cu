// CUDA lerp: y = a + w (b - a), with w the scalar `weight` (default 0.5) or the tensor input w
// broadcast to a's shape. Evaluated as torch does: a + w (b - a) for |w| < 0.5, else
// b - (b - a)(1 - w), so w = 1 gives b exactly.
// Kernels: kernels/cuda/elementwise.cuh (2 inputs for a scalar weight, 3 for a weight tensor).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

__device__ __forceinline__ float lerp_value(float a, float b, float w) {
  return fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.f - w);
}

struct LerpScalarOp {
  float weight;
  __device__ float operator()(float a, float b) const { return lerp_value(a, b, weight); }
};

struct LerpTensorOp {
  __device__ float operator()(float a, float b, float w) const { return lerp_value(a, b, w); }
};

Status run_lerp(OpCall& call) {
  if (call.inputs.size() == 3) return run_elementwise<3>(call, {"a", "b", "w"}, LerpTensorOp{});
  auto weight = call.problem.get_double("weight", 0.5);
  if (!weight) return weight.status();
  return run_elementwise<2>(call, {"a", "b"}, LerpScalarOp{static_cast<float>(*weight)});
}

Status check_lerp(const Problem& problem) {
  auto weight = problem.get_double("weight", 0.5);
  return weight ? Status::ok() : weight.status();
}

DNNB_REGISTER(register_cuda("lerp", "", "", {DType::f32, DType::f16, DType::bf16}, run_lerp,
                            check_lerp));

}  // namespace
}  // namespace dnnb::cuda_kernels
