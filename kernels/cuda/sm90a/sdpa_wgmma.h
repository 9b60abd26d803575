// The Hopper attention forward (sdpa_wgmma.cu): whether it takes a problem, and its launch.
// sdpa.cu asks sdpa_wgmma_applies first and runs the mma.sync kernel (sdpa_mma.cuh) otherwise.
#pragma once
#include <cuda.h>

#include "kernels/cuda/sdpa_common.cuh"

namespace dnnb::cuda_kernels::sdpa {

// True on a compute capability 9.0 device for f16/bf16 with D = Dv in {64, 128, 256}, q, k, v
// that TMA can describe (16-byte aligned, unit element stride, row/head/batch strides multiples
// of 8 elements), a scale > 0 and neither softcap nor an additive mask, unless the environment
// sets DNNB_CUDA_SDPA_WGMMA=0. Causal, the sliding window, GQA, any sq and sk.
bool sdpa_wgmma_applies(const CudaDevice& device, const Attn& a, DType dtype);

// Runs the forward (a.o and a.lse set) on the device's stream; unsupported where
// sdpa_wgmma_applies is false.
Status launch_sdpa_wgmma(const CudaDevice& device, const Attn& a, DType dtype);

// What the Hopper forward and backward (sdpa_bwd_wgmma.cu) share.
// Every key j0 .. j0 + kBN - 1 is visible to rows row0 .. row0 + 15 (those below sq): the tile
// needs no mask for that warp.
__device__ __forceinline__ bool whole_tile(const Attn& p, int j0, int kBN, int row0) {
  return j0 + kBN <= p.sk && (!p.causal || j0 + kBN - 1 <= row0) && (p.window == 0 || j0 > row0 + 15 - p.window);
}
// TMA can describe the operand [batch, heads, rows, D]: 16-byte aligned, unit element stride,
// the other strides positive multiples of 16 bytes below 2^40 bytes (unused where the extent is 1).
bool tma_operand(const Operand& x, int64_t rows, int64_t heads, int64_t batch);
// The 4-D map (D, rows, heads, batch) of an operand, boxes of 64 columns x box_rows rows.
Result<CUtensorMap> operand_map(DType dtype, const Operand& x, int d, int64_t rows, int64_t heads, int64_t batch,
                                uint32_t box_rows);

}  // namespace dnnb::cuda_kernels::sdpa
