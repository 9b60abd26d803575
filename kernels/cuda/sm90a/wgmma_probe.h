// The tensor-core throughput probe of a Hopper GPU (devices/cuda/cuda_ceilings.cu registers it as
// bf16_tensor_flops_per_s and f16_tensor_flops_per_s): chains of wgmma.mma_async m64n256k16, both
// operands from shared memory, which is how a GEMM reaches the dense tensor rate on sm_90 (the
// warp-level mma.sync does not). Built for sm_90a (wgmma_probe.cu); a plain C++ header, so the
// portable sm_90 code of devices/cuda can call it.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "core/status.h"

namespace dnnb::cuda_kernels {

struct WgmmaProbeGrid {
  int blocks = 0;   // CTAs: every SM holds as many as fit on it at once
  int threads = 0;  // per CTA, whole warpgroups of 128
  int blocks_per_sm = 0;
  double flop_per_thread_iteration = 0;  // FLOP of one loop trip of the grid / (blocks x threads)
  std::string how;  // what the kernel issues and on what grid, for the probe's how line
};

// The grid that fills every SM of the device; unsupported unless its compute capability is 9.0
// exactly (sm_90a code runs nowhere else). The device must be the current one.
Result<WgmmaProbeGrid> wgmma_probe_grid(int device_ordinal, bool bf16);

// Launches the probe on `stream`: each warpgroup runs `iterations` loop trips (one commit group
// of 4 wgmma m64n256k16 each, 2 x 64 x 256 x 64 FLOP), then writes the sum of its accumulators
// (zero: the operands are zeros) to out[block x threads + thread]; out holds blocks x threads
// floats. Checks the launch.
Status launch_wgmma_probe(const WgmmaProbeGrid& grid, bool bf16, long long iterations, float* out, cudaStream_t stream);

}  // namespace dnnb::cuda_kernels
