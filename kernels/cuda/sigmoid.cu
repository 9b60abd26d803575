// CUDA sigmoid: y = 1 / (1 + exp(-x)). expf (not __expf) and IEEE division: about 2 ulp in
// f32. Large negative x gives exp = inf and y = 0, as it should.
// Kernel and launch shape: kernels/cuda/elementwise.cuh (16-byte vectors, f32 math).
#include "kernels/cuda/elementwise.cuh"

namespace dnnb::cuda_kernels {
namespace {

struct SigmoidOp {
  __device__ float operator()(float x) const { return 1.f / (1.f + expf(-x)); }
};

DNNB_REGISTER(register_unary("sigmoid", SigmoidOp{}));

}  // namespace
}  // namespace dnnb::cuda_kernels
