// The Hopper attention backward (sdpa_bwd_wgmma.cu): whether it takes a problem, its workspace
// and its launch. sdpa_bwd.cu asks sdpa_bwd_wgmma_applies first and runs the mma.sync kernels
// (sdpa_bwd_mma.cuh) or the FMA ones otherwise.
#pragma once
#include "kernels/cuda/sdpa_common.cuh"

namespace dnnb::cuda_kernels::sdpa {

// Workspace bytes of the Hopper backward: lse log2e and D_i = do_i . o_i per (batch, head) over
// sq rounded up to 128 rows (f32 each).
size_t sdpa_bwd_wgmma_workspace(const Attn& a);

// True on a compute capability 9.0 device for f16/bf16 with D = Dv in {64, 128}, q, k, v and do
// that TMA can describe (sdpa_wgmma.h's tma_operand), a scale > 0, neither softcap nor an
// additive mask, and a 16-byte aligned workspace, unless the environment sets
// DNNB_CUDA_SDPA_BWD_WGMMA=0. Causal, the sliding window, GQA, any sq and sk.
bool sdpa_bwd_wgmma_applies(const CudaDevice& device, const Attn& a, DType dtype, const void* workspace);

// Runs the backward (a.dq, a.dk, a.dv_out set) on the device's stream with `workspace`
// (sdpa_bwd_wgmma_workspace bytes); unsupported where sdpa_bwd_wgmma_applies is false.
Status launch_sdpa_bwd_wgmma(const CudaDevice& device, const Attn& a, DType dtype, void* workspace);

}  // namespace dnnb::cuda_kernels::sdpa
