// CUDA sdpa: o = softmax(scale q k^T [softcap] + mask) v and the row logsumexp (f32), with GQA,
// top-left causal, sliding window, softcap and an additive mask (suites/ops/sdpa_desc.h).
//   f16/bf16 on compute capability 9.0 with D = Dv in {64, 128, 256}, q, k, v that TMA can
//     describe (16-byte aligned rows, unit element stride), scale > 0, no softcap and no mask:
//     the Hopper kernel (sm90a/sdpa_wgmma.cu, FlashAttention 3's structure: TMA, wgmma, a
//     producer and two consumer warpgroups). DNNB_CUDA_SDPA_WGMMA=0 turns it off.
//   other f16/bf16 with D in {64, 128, 256} and Dv in {32, 64, 128, 256}: the tensor-core kernel
//     (sdpa_mma.cuh, FlashAttention 2's schedule on mma.sync m16n8k16).
//   f32, and other head dims up to 256: the f32-FMA kernel (sdpa_f32.cuh).
// Scores, the softmax and the accumulation are f32; o is rounded once. Any strides (padded or
// transposed operands take element loads instead of cp.async).
#include "kernels/cuda/sdpa_f32.cuh"
#include "kernels/cuda/sdpa_mma.cuh"
#include "kernels/cuda/sm90a/sdpa_wgmma.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cuda_kernels::sdpa {
namespace {

Status check_grid(int64_t blocks) {
  if (blocks > INT_MAX) return Status::unsupported("cuda sdpa: " + std::to_string(blocks) + " blocks exceed the grid");
  return Status::ok();
}

template <typename T, int D, int DV>
Status launch_mma(const CudaDevice& device, const Attn& a) {
  constexpr int kSmem = MmaTile<D, DV>::kSmem;
  const int64_t m_blocks = ceil_div(a.sq, kMmaRows);
  const int64_t blocks = m_blocks * a.batch * a.heads;
  DNNB_TRY(check_grid(blocks));
  const MmaPaths paths = mma_paths(a.q, a.k, a.v, a.o);
  auto kernel = sdpa_fwd_mma_kernel<T, D, DV>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  kernel<<<static_cast<unsigned>(blocks), kMmaThreads, kSmem, device.stream()>>>(a, paths, static_cast<int>(m_blocks));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T, int D>
Status launch_mma_dv(const CudaDevice& device, const Attn& a) {
  switch (a.dv) {
    case 32: return launch_mma<T, D, 32>(device, a);
    case 64: return launch_mma<T, D, 64>(device, a);
    case 128: return launch_mma<T, D, 128>(device, a);
    case 256: return launch_mma<T, D, 256>(device, a);
    default: return Status::error("cuda sdpa: no tensor-core kernel for Dv=" + std::to_string(a.dv));
  }
}

template <typename T>
Status launch_mma_typed(const CudaDevice& device, const Attn& a) {
  switch (a.d) {
    case 64: return launch_mma_dv<T, 64>(device, a);
    case 128: return launch_mma_dv<T, 128>(device, a);
    case 256: return launch_mma_dv<T, 256>(device, a);
    default: return Status::error("cuda sdpa: no tensor-core kernel for D=" + std::to_string(a.d));
  }
}

template <typename T, int C>
Status launch_f32_sized(const CudaDevice& device, const Attn& a) {
  const int64_t m_blocks = ceil_div(a.sq, kTile);
  const int64_t blocks = m_blocks * a.batch * a.heads;
  DNNB_TRY(check_grid(blocks));
  const size_t smem = fwd_f32_smem_bytes(a.d, a.dv);
  auto kernel = sdpa_fwd_f32_kernel<T, C>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  kernel<<<static_cast<unsigned>(blocks), kF32Threads, smem, device.stream()>>>(a, static_cast<int>(m_blocks));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T>
Status launch_f32(const CudaDevice& device, const Attn& a) {
  switch (f32_capacity(a.d, a.dv)) {
    case 64: return launch_f32_sized<T, 64>(device, a);
    case 128: return launch_f32_sized<T, 128>(device, a);
    default: return launch_f32_sized<T, 256>(device, a);
  }
}

bool uses_mma(const Problem& problem, int d, int dv) { return problem.dtype != DType::f32 && mma_head_dims(d, dv); }

Status run_sdpa(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto a = attn_inputs(call, false);
  if (!a) return a.status();
  auto d = ops::sdpa_desc(call.problem);
  if (!d) return d.status();
  const DType t = call.problem.dtype;
  auto o = operand_of(call.outputs[0], t, ops::sdpa_o_shape(*d), "o");
  auto lse = operand_of(call.outputs[1], DType::f32, ops::sdpa_lse_shape(*d), "lse");
  if (!o) return o.status();
  if (!lse) return lse.status();
  a->o = *o;
  a->lse = *lse;
  if (t != DType::f32 && sdpa_wgmma_applies(**device, *a, t)) return launch_sdpa_wgmma(**device, *a, t);
  const bool mma = uses_mma(call.problem, a->d, a->dv);
  return dispatch_float(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      return launch_f32<T>(**device, *a);
    } else {
      return mma ? launch_mma_typed<T>(**device, *a) : launch_f32<T>(**device, *a);
    }
  });
}

// The tensor-core unit where the mma kernel runs (f16/bf16 at its head dims), else the FMA units.
std::string sdpa_unit(const Problem& problem) {
  auto d = ops::sdpa_desc(problem);
  if (d && uses_mma(problem, static_cast<int>(d->d), static_cast<int>(d->dv))) return ops::tensor_core_unit(problem);
  return "f32_fma";
}

DNNB_REGISTER(register_attention("sdpa", run_sdpa, sdpa_unit, {}));

}  // namespace
}  // namespace dnnb::cuda_kernels::sdpa
