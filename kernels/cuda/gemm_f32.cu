// Launches of the f32 GEMMs (gemm_f32.cuh): full f32 FMA, or tf32 tensor cores when allowed.
#include <cstdlib>

#include "kernels/cuda/gemm_f32.cuh"

namespace dnnb::cuda_kernels {

Status launch_gemm_f32(const CudaDevice& device, const GemmCall& g) {
  if (g.in_dtype != DType::f32 || g.out_dtype != DType::f32)
    return Status::unsupported(std::string("cuda f32 gemm: ") + dtype_name(g.in_dtype) + " -> " +
                               dtype_name(g.out_dtype) + " is not an f32 product");
  gemm::F32Args p{};
  p.a = static_cast<const float*>(g.a);
  p.a_batch = g.a_batch;
  p.a_m = g.a_m;
  p.a_k = g.a_k;
  p.b = static_cast<const float*>(g.b);
  p.b_batch = g.b_batch;
  p.b_k = g.b_k;
  p.b_n = g.b_n;
  p.bias = static_cast<const float*>(g.bias);
  p.bias_stride = g.bias_stride;
  p.y = static_cast<float*>(g.y);
  p.y_batch = g.y_batch;
  p.y_m = g.y_m;
  p.m = static_cast<int>(g.m);
  p.n = static_cast<int>(g.n);
  p.k = static_cast<int>(g.k);
  p.tiles_m = static_cast<int>(ceil_div(g.m, gemm::kF32BM));
  p.tiles_n = static_cast<int>(ceil_div(g.n, gemm::kF32BN));
  p.a_k_fast = std::llabs(g.a_k) <= std::llabs(g.a_m);
  p.b_k_fast = std::llabs(g.b_k) <= std::llabs(g.b_n);
  p.y_vec4 = reinterpret_cast<uintptr_t>(g.y) % 16 == 0 && g.y_m % 4 == 0 && (g.batch == 1 || g.y_batch % 4 == 0);
  if (static_cast<int64_t>(p.tiles_m) * p.tiles_n > INT32_MAX)
    return Status::unsupported("cuda f32 gemm: " + std::to_string(p.tiles_m) + " x " + std::to_string(p.tiles_n) +
                               " output tiles exceed the grid");
  const dim3 grid(static_cast<unsigned>(p.tiles_m * p.tiles_n), 1, static_cast<unsigned>(g.batch));
  if (g.tf32) {
    DNNB_CUDA_TRY(cudaFuncSetAttribute(gemm::gemm_tf32_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       gemm::kTf32Smem));
    gemm::gemm_tf32_kernel<<<grid, gemm::kF32Threads, gemm::kTf32Smem, device.stream()>>>(p);
  } else {
    gemm::gemm_f32_fma_kernel<<<grid, gemm::kF32Threads, 0, device.stream()>>>(p);
  }
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

}  // namespace dnnb::cuda_kernels
