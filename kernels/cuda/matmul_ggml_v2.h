// matmul_ggml's q8_0 matvec for decode (M <= 4, whole 8-block groups): ggml_matvec_v2
// (kernels/cuda/matmul_ggml_v2.cu), called by run_matmul_ggml (kernels/cuda/matmul_ggml.cu)
// after ggml_quantize_x has written x in v2's order (v2_slot below).
#pragma once
#include <cstdint>

#include "core/status.h"
#include "devices/cuda/cuda_device.h"
#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

// Launches `kernel` on the device's stream as a programmatic dependent launch of the launch
// before it (the quantiser): its blocks may start while that one runs, and wait for its writes
// with griddepcontrol.wait. Both matvecs are launched so.
template <typename A>
Status launch_after_quantiser(const CudaDevice& device, void (*kernel)(A), unsigned grid, unsigned threads, size_t smem,
                              const A& args) {
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  return launch_with_attribute(device, kernel, grid, threads, smem, dependent, args);
}

}  // namespace dnnb::cuda_kernels

namespace dnnb::cuda_kernels::ggml_v2 {

struct Args {
  const unsigned char* w;  // q8_0 rows, 16-byte aligned
  int64_t w_row_bytes;     // a multiple of 272 (whole 8-block groups) and of 16
  int n, nb, m;            // rows of w, blocks of K (a multiple of 8), tokens (1 .. 4)
  const int8_t* xq;        // m x nb x 32 quants, each block in v2_slot order
  const float* xd;         // nb x 8 decoded scales (token t of block b at 8 b + t), zero past m
  float* y;
  int64_t y_row;
};

// Where ggml_quantize_x stores value l (0 .. 31) of block b of a row of x for v2: an odd block's
// quants as they are; an even block's in the order its staged w words give them (quants 2 .. 29,
// then 0, 1, 30, 31), so every dot is 4-byte words against 4-byte words.
__host__ __device__ inline int v2_slot(int l, int b) {
  if (b & 1) return l;
  return l >= 2 && l < 30 ? l - 2 : (l < 2 ? 28 + l : l);
}

// Warps a block for the wanted count: at most the groups of K, and fewer when a block's shared
// memory (the warps' rings plus x) would pass sm_90's 227 KB; 0 when even one warp does not fit.
int plan_warps(int64_t m, int64_t nb, int stages, int warps);

// Whether v2 takes the problem: q8_0, 1 <= M <= 4, whole 8-block groups, w and its rows 16-byte
// aligned, 32 rows of offsets in int32, and a block that fits in shared memory.
bool fits(bool q8, int64_t m, int64_t nb, uintptr_t w, int64_t w_row_bytes, int stages, int warps);

// Launches ggml_matvec_v2 (a programmatic dependent launch of the quantiser) on the stream.
Status launch(const CudaDevice& device, const Args& p, int stages, int warps);

}  // namespace dnnb::cuda_kernels::ggml_v2
