// CUDA rope: each pair of x rotated by its position's f32 angle (docs/ops-family3.md, "Position");
// the kernel is rope.cuh's (one block per position, sincosf once per pair and thread, 16-byte rows).
#include "kernels/cuda/rope.cuh"

namespace dnnb::cuda_kernels {
namespace {

DNNB_REGISTER(register_cuda("rope", "", "", {DType::f32, DType::f16, DType::bf16},
                            [](OpCall& call) { return rope_detail::run_rope(call, 1.f); }, rope_detail::rope_extra));

}  // namespace
}  // namespace dnnb::cuda_kernels
