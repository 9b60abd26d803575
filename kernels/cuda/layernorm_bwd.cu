// CUDA layernorm_bwd: the shared backward-norm kernels of norm_bwd.cuh (centered: x - mean, and db).
#include "kernels/cuda/norm_bwd.cuh"

namespace dnnb::cuda_kernels {
namespace {

DNNB_REGISTER(register_cuda("layernorm_bwd", "", "", {DType::f32, DType::f16, DType::bf16}, run_norm_bwd<true>));

}  // namespace
}  // namespace dnnb::cuda_kernels
