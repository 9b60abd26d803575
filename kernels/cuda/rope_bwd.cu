// CUDA rope_bwd: dx = dy rotated by the negative angle, the transpose of rope's rotation; the
// kernel is rope.cuh's with the sines negated.
#include "kernels/cuda/rope.cuh"

namespace dnnb::cuda_kernels {
namespace {

DNNB_REGISTER(register_cuda("rope_bwd", "", "", {DType::f32, DType::f16, DType::bf16},
                            [](OpCall& call) { return rope_detail::run_rope(call, -1.f); }, rope_detail::rope_extra));

}  // namespace
}  // namespace dnnb::cuda_kernels
