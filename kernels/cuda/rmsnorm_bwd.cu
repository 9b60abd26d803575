// CUDA rmsnorm_bwd: the shared backward-norm kernels of norm_bwd.cuh (uncentered; form=gemma adds 1 to w).
#include "kernels/cuda/norm_bwd.cuh"

namespace dnnb::cuda_kernels {
namespace {

DNNB_REGISTER(register_cuda("rmsnorm_bwd", "", "", {DType::f32, DType::f16, DType::bf16}, run_norm_bwd<false>));

}  // namespace
}  // namespace dnnb::cuda_kernels
