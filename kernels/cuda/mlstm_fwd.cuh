// The launch of the mLSTM forward (mlstm_mma.cuh, mlstm_fma.cuh) that mlstm_chunkwise.cu (the
// last states), mlstm.cu (kModeParallel: rows' n and m) and mlstm_bwd.cu (kModeDel) share:
//   f16/bf16 with DQK in {64, 128, 256} and DV a multiple of the block's v columns (64; 32 at
//     DQK 256): the tensor-core kernel;
//   f32, and other f16/bf16 head dims with DQK <= 256: the FMA kernel.
#pragma once
#include "kernels/cuda/mlstm_fma.cuh"
#include "kernels/cuda/mlstm_mma.cuh"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cuda_kernels::mlstm {

// Whether the tensor-core kernel splits the state's roundings (mlstm_mma.cuh, "Rounding").
inline bool fwd_split(bool parallel, int64_t chunk) { return parallel || 64 % chunk != 0; }

inline int mma_dvt(int dqk, bool split) { return dqk >= 256 || split ? kMmaDvt<256, true> : kMmaDvt<128, false>; }

inline bool fwd_uses_mma(DType t, int dqk, int dv, bool split) {
  return t != DType::f32 && (dqk == 64 || dqk == 128 || dqk == 256) && dv % mma_dvt(dqk, split) == 0;
}

// The forward's shape limit: q and k rows of up to 256 in shared memory (FMA kernel).
inline Status fwd_limits(const Problem& problem) {
  auto a = mlstm_shape(problem);
  if (!a) return a.status();
  if (a->dqk > kFmaMaxDqk)
    return Status::unsupported("cuda " + problem.op + ": DQK up to " + std::to_string(kFmaMaxDqk) +
                               " (q and k tiles in shared memory), got " + std::to_string(a->dqk));
  return Status::ok();
}

inline std::string fwd_unit(const Problem& problem) {
  auto a = mlstm_shape(problem);
  auto d = ops::mlstm_desc(problem);
  if (a && d && fwd_uses_mma(problem.dtype, a->dqk, a->dv, fwd_split(problem.op == "mlstm", d->chunk)))
    return ops::tensor_core_unit(problem);
  return "f32_fma";
}

inline Status check_blocks(const std::string& op, int64_t blocks) {
  if (blocks > INT_MAX) return Status::unsupported("cuda " + op + ": " + std::to_string(blocks) + " blocks exceed the grid");
  return Status::ok();
}

template <typename T, int DQK, int kMode, bool kSplit>
Status launch_fwd_mma(const CudaDevice& device, const MlstmArgs& a, const std::string& op) {
  constexpr int DVT = kMmaDvt<DQK, kSplit>;
  constexpr int kSmem = MmaLayout<DQK, DVT, kSplit>::kSmem;
  const int64_t blocks = static_cast<int64_t>(a.batch) * a.heads * (a.dv / DVT);
  DNNB_TRY(check_blocks(op, blocks));
  auto kernel = mlstm_fwd_mma_kernel<T, DQK, DVT, kMode, kSplit>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  kernel<<<static_cast<unsigned>(blocks), kMmaThreads, kSmem, device.stream()>>>(a, mma_paths(a.q, a.k, a.v, a.h));
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T, int kMode>
Status launch_fwd_fma(const CudaDevice& device, const MlstmArgs& a, const std::string& op) {
  const FmaLayout lay = fma_layout(a.dqk);
  const int64_t blocks = static_cast<int64_t>(a.batch) * a.heads * ceil_div(a.dv, kFmaDvt);
  DNNB_TRY(check_blocks(op, blocks));
  auto kernel = mlstm_fwd_fma_kernel<T, kMode>;
  DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(lay.bytes)));
  kernel<<<static_cast<unsigned>(blocks), kFmaThreads, lay.bytes, device.stream()>>>(a, lay);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <typename T, int kMode, bool kSplit>
Status launch_fwd_mma_dqk(const CudaDevice& device, const MlstmArgs& a, const std::string& op) {
  switch (a.dqk) {
    case 64: return launch_fwd_mma<T, 64, kMode, kSplit>(device, a, op);
    case 128: return launch_fwd_mma<T, 128, kMode, kSplit>(device, a, op);
    default: return launch_fwd_mma<T, 256, kMode, kSplit>(device, a, op);
  }
}

// The v-column blocks of a forward launch (kModeDel's shares of dh . h per row): every kernel
// that splits or runs on the FMA units takes 32 columns a block.
inline int64_t fwd_del_tiles(int dv) { return ceil_div(dv, 32); }

// chunk: the problem's chunk= (mlstm_chunkwise; the other modes always split).
template <int kMode>
Status launch_fwd(const CudaDevice& device, const MlstmArgs& a, DType dtype, int64_t chunk, const std::string& op) {
  static_assert(kMmaDvt<128, true> == 32 && kMmaDvt<256, true> == 32 && kFmaDvt == 32, "fwd_del_tiles");
  DNNB_TRY(dispatch_float(dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float>) {
      const bool split = fwd_split(kMode != kModeChunk, chunk);
      if (fwd_uses_mma(dtype, a.dqk, a.dv, split)) {
        if constexpr (kMode != kModeChunk) {
          return launch_fwd_mma_dqk<T, kMode, true>(device, a, op);
        } else {
          return split ? launch_fwd_mma_dqk<T, kMode, true>(device, a, op)
                       : launch_fwd_mma_dqk<T, kMode, false>(device, a, op);
        }
      }
    }
    return launch_fwd_fma<T, kMode>(device, a, op);
  }));
  return Status::ok();
}

}  // namespace dnnb::cuda_kernels::mlstm
