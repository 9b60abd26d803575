// The Hopper attention forward (sdpa_wgmma.cu): whether it takes a problem, and its launch.
// sdpa.cu asks sdpa_wgmma_applies first and runs the mma.sync kernel (sdpa_mma.cuh) otherwise.
#pragma once
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

}  // namespace dnnb::cuda_kernels::sdpa
