// CUDA sdpa_bwd: dq, dk, dv of sdpa for an upstream gradient do, from the forward's o and lse
// (FlashAttention 2's recomputation: p = exp(s - lse), D_i = do_i . o_i, dS = p (dP - D) times
// the softcap's 1 - tanh^2, dq = scale dS k, dk = scale dS^T q, dv = p^T do).
//
// Two kernels: dq (and D_i) per query tile, then dk and dv per key tile summed over the kv
// head's group inside the block; no atomics, each output rounded once.
//   f16/bf16 on compute capability 9.0 with D = Dv in {64, 128}, TMA-describable q, k, v, do,
//     scale > 0, no softcap or mask: the Hopper kernels (sm90a/sdpa_bwd_wgmma.cu: TMA, wgmma, a
//     producer and two consumer warpgroups). DNNB_CUDA_SDPA_BWD_WGMMA=0 turns them off.
//   other f16/bf16 with D in {64, 128} and Dv in {32, 64, 128}: on the tensor cores (sdpa_bwd_mma.cuh).
//   f32, and other head dims up to 256: f32 FMA (sdpa_bwd.cuh).
// The price of no atomics is S and dP computed twice (7 products of a tile where the atomic
// form has 5). The workspace is D, then the FMA path's row normalisers n (sdpa_bwd.cuh): 2 x B x
// H x Sq floats; the Hopper kernels' lse log2e and D over rows padded to 128 when that is more.
#include "kernels/cuda/sdpa_bwd.cuh"
#include "kernels/cuda/sdpa_bwd_mma.cuh"
#include "kernels/cuda/sm90a/sdpa_bwd_wgmma.h"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cuda_kernels::sdpa {
namespace {

template <typename T, int C>
Status launch_bwd(const CudaDevice& device, const Attn& a) {
  const int64_t m_blocks = ceil_div(a.sq, kTile), n_blocks = ceil_div(a.sk, kTile);
  const int64_t dq_blocks = m_blocks * a.batch * a.heads, dkv_blocks = n_blocks * a.batch * a.kv_heads;
  if (dq_blocks > INT_MAX || dkv_blocks > INT_MAX)
    return Status::unsupported("cuda sdpa_bwd: " + std::to_string(std::max(dq_blocks, dkv_blocks)) +
                               " blocks exceed the grid");
  const size_t smem = bwd_smem_bytes(a.d, a.dv);
  auto dq_kernel = sdpa_bwd_dq_kernel<T, C>;
  auto dkv_kernel = sdpa_bwd_dkv_kernel<T, C>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(dq_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  DNNB_CUDA_TRY(cudaFuncSetAttribute(dkv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  dq_kernel<<<static_cast<unsigned>(dq_blocks), kF32Threads, smem, device.stream()>>>(a, static_cast<int>(m_blocks));
  DNNB_CUDA_CHECK_LAUNCH();
  // Same stream: the dk/dv kernel reads the D the dq kernel stored.
  dkv_kernel<<<static_cast<unsigned>(dkv_blocks), kF32Threads, smem, device.stream()>>>(a, static_cast<int>(n_blocks));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T, int D, int DV>
Status launch_bwd_mma(const CudaDevice& device, const Attn& a) {
  constexpr int kDqSmem = DqTile<D, DV>::kSmem, kDkvSmem = DkvTile<D, DV>::kSmem;
  const int64_t m_blocks = ceil_div(a.sq, kMmaRows), n_blocks = ceil_div(a.sk, DkvTile<D, DV>::kBN);
  const int64_t dq_blocks = m_blocks * a.batch * a.heads, dkv_blocks = n_blocks * a.batch * a.kv_heads;
  if (dq_blocks > INT_MAX || dkv_blocks > INT_MAX)
    return Status::unsupported("cuda sdpa_bwd: " + std::to_string(std::max(dq_blocks, dkv_blocks)) +
                               " blocks exceed the grid");
  const BwdMmaPaths paths = bwd_mma_paths(a);
  const bool dq_pairs = pair_rows(a.dq), kv_pairs = pair_rows(a.dk) && pair_rows(a.dv_out);
  auto dq_kernel = sdpa_bwd_dq_mma_kernel<T, D, DV>;
  auto dkv_kernel = sdpa_bwd_dkv_mma_kernel<T, D, DV>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(dq_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kDqSmem));
  DNNB_CUDA_TRY(cudaFuncSetAttribute(dkv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kDkvSmem));
  dq_kernel<<<static_cast<unsigned>(dq_blocks), kMmaThreads, kDqSmem, device.stream()>>>(a, paths, dq_pairs,
                                                                                         static_cast<int>(m_blocks));
  DNNB_CUDA_CHECK_LAUNCH();
  // Same stream: the dk/dv kernel reads the D the dq kernel stored.
  dkv_kernel<<<static_cast<unsigned>(dkv_blocks), kMmaThreads, kDkvSmem, device.stream()>>>(a, paths, kv_pairs,
                                                                                            static_cast<int>(n_blocks));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T, int D>
Status launch_bwd_mma_dv(const CudaDevice& device, const Attn& a) {
  switch (a.dv) {
    case 32: return launch_bwd_mma<T, D, 32>(device, a);
    case 64: return launch_bwd_mma<T, D, 64>(device, a);
    case 128: return launch_bwd_mma<T, D, 128>(device, a);
    default: return Status::error("cuda sdpa_bwd: no tensor-core kernel for Dv=" + std::to_string(a.dv));
  }
}

template <typename T>
Status launch_bwd_mma_typed(const CudaDevice& device, const Attn& a) {
  switch (a.d) {
    case 64: return launch_bwd_mma_dv<T, 64>(device, a);
    case 128: return launch_bwd_mma_dv<T, 128>(device, a);
    default: return Status::error("cuda sdpa_bwd: no tensor-core kernel for D=" + std::to_string(a.d));
  }
}

bool bwd_uses_mma(const Problem& problem, int d, int dv) {
  return problem.dtype != DType::f32 && bwd_mma_head_dims(d, dv);
}

size_t delta_bytes(const Attn& a) {
  return std::max(2 * sizeof(float) * static_cast<size_t>(a.batch) * static_cast<size_t>(a.heads) *
                      static_cast<size_t>(a.sq),
                  sdpa_bwd_wgmma_workspace(a));
}

Result<size_t> bwd_workspace(const Problem& problem, const DeviceRuntime&) {
  auto a = attn_shape(problem);
  if (!a) return a.status();
  return delta_bytes(*a);
}

Status run_sdpa_bwd(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto a = attn_inputs(call, true);
  if (!a) return a.status();
  auto d = ops::sdpa_desc(call.problem);
  if (!d) return d.status();
  const DType t = call.problem.dtype;
  auto dq = operand_of(call.outputs[0], t, ops::sdpa_q_shape(*d), "dq");
  auto dk = operand_of(call.outputs[1], t, ops::sdpa_k_shape(*d), "dk");
  auto dv = operand_of(call.outputs[2], t, ops::sdpa_v_shape(*d), "dv");
  if (!dq) return dq.status();
  if (!dk) return dk.status();
  if (!dv) return dv.status();
  a->dq = *dq;
  a->dk = *dk;
  a->dv_out = *dv;
  const Tensor& ws = call.workspace;
  if (!ws.buffer || ws.buffer->handle == nullptr || storage_bytes(ws.dtype, ws.numel()) < delta_bytes(*a))
    return Status::error("cuda sdpa_bwd: the workspace of " + std::to_string(delta_bytes(*a)) +
                         " bytes for D is missing");
  if (reinterpret_cast<uintptr_t>(data_ptr<unsigned char>(ws)) % alignof(float) != 0)
    return Status::error("cuda sdpa_bwd: the workspace is not 4-byte aligned");
  a->delta = data_ptr<float>(ws);
  if (t != DType::f32 && sdpa_bwd_wgmma_applies(**device, *a, t, a->delta))
    return launch_sdpa_bwd_wgmma(**device, *a, t, a->delta);
  const int capacity = f32_capacity(a->d, a->dv);
  const bool mma = bwd_uses_mma(call.problem, a->d, a->dv);
  return dispatch_float(t, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>)
      if (mma) return launch_bwd_mma_typed<T>(**device, *a);
    if (capacity == 64) return launch_bwd<T, 64>(**device, *a);
    if (capacity == 128) return launch_bwd<T, 128>(**device, *a);
    return launch_bwd<T, 256>(**device, *a);
  });
}

// The tensor-core unit where the mma kernels run (f16/bf16 at their head dims), else the FMA units.
std::string sdpa_bwd_unit(const Problem& problem) {
  auto d = ops::sdpa_desc(problem);
  if (d && bwd_uses_mma(problem, static_cast<int>(d->d), static_cast<int>(d->dv)))
    return ops::tensor_core_unit(problem);
  return "f32_fma";
}

DNNB_REGISTER(register_attention("sdpa_bwd", run_sdpa_bwd, sdpa_bwd_unit, bwd_workspace));

}  // namespace
}  // namespace dnnb::cuda_kernels::sdpa
