// The strided operand of the CUDA attention kernels (sdpa and the mLSTM: their *_common.cuh say
// what each operand holds) and the host-side checks that choose their tensor-core paths
// (sdpa_mma.cuh, sdpa_bwd_mma.cuh, mlstm_mma.cuh, mlstm_bwd_mma.cuh, sm90a/sdpa*_wgmma.cu).
#pragma once
#include <cstdint>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels::attention {

// One operand: element (b, h, s, e) at data + b sb + h sh + s ss + e se (elements). Per-row
// values [B, H, S] have se = 0; a 2-d or 3-d operand's own header says how its axes map.
struct Operand {
  void* data = nullptr;
  int64_t sb = 0, sh = 0, ss = 0, se = 0;

  template <typename T>
  __device__ __forceinline__ T* head(int b, int h) const {
    return static_cast<T*>(data) + b * sb + h * sh;
  }
};

inline bool aligned_to(const void* ptr, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(ptr) % bytes == 0; }

// cp.async takes an operand whose rows start 16-byte aligned with unit element stride.
inline bool async_rows(const Operand& x) {
  return aligned_to(x.data, 16) && x.se == 1 && x.ss % 8 == 0 && x.sh % 8 == 0 && x.sb % 8 == 0;
}

// Two adjacent elements of a 16-bit output row may be stored as one 4-byte access.
inline bool pair_rows(const Operand& x) {
  return aligned_to(x.data, 4) && x.se == 1 && x.ss % 2 == 0 && x.sh % 2 == 0 && x.sb % 2 == 0;
}

// Which operands a tensor-core forward (sdpa, mLSTM) may copy with cp.async, and whether its
// output's (o, h) column pairs may be stored as one 4-byte access.
struct MmaPaths {
  bool q_async = false, k_async = false, v_async = false, out_pairs = false;
};

inline MmaPaths mma_paths(const Operand& q, const Operand& k, const Operand& v, const Operand& out) {
  MmaPaths paths;
  paths.q_async = async_rows(q);
  paths.k_async = async_rows(k);
  paths.v_async = async_rows(v);
  paths.out_pairs = pair_rows(out);
  return paths;
}

}  // namespace dnnb::cuda_kernels::attention
