// matmul_ggml's q8_0 matvec for decode (M <= 4, whole 8-block groups): ggml_matvec_rows
// (kernels/cuda/matmul_ggml_rows.cu), called by run_matmul_ggml (kernels/cuda/matmul_ggml.cu)
// after ggml_quantize_x has written x in its order (rows_slot below).
#pragma once
#include <cstdint>

#include "core/status.h"
#include "devices/cuda/cuda_device.h"
#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

// float(s) for |s| < 2^22, exactly: s in the significand of 1.5 x 2^23, then the bias taken off
// (instead of the quarter-rate I2F). Both matvecs turn their blocks' integer dots into floats so.
__device__ __forceinline__ float exact_float(int s) { return __int_as_float(0x4b400000 + s) - 12582912.0f; }

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

namespace dnnb::cuda_kernels::ggml_rows {

struct Args {
  const unsigned char* w;  // q8_0 rows, 16-byte aligned
  int64_t w_row_bytes;     // a multiple of 16, at least 34 x nb
  int n, nb, m;            // rows of w, blocks of K (a multiple of 8), tokens (1 .. 4)
  const int8_t* xq;        // m x nb x 32 quants, each block in rows_slot order
  const float* xd;         // nb x 8 decoded scales (token t of block b at 8 b + t)
  float* y;
  int64_t y_row;
};

// Where ggml_quantize_x stores value l (0 .. 31) of block b of a row of x for this kernel: an
// odd block's quants as they are; an even block's in the order its w words give them (quants
// 2 .. 29, then 0, 1, 30, 31), so every dot is 4-byte words against 4-byte words.
__host__ __device__ inline int rows_slot(int l, int b) {
  if (b & 1) return l;
  return l >= 2 && l < 30 ? l - 2 : (l < 2 ? 28 + l : l);
}

// Whether ggml_matvec_rows takes the problem: q8_0, 1 <= M <= 4, whole 8-block groups, w and
// its rows 16-byte aligned, and x of one block in shared memory.
bool fits(bool q8, int64_t m, int64_t nb, uintptr_t w, int64_t w_row_bytes);

// Launches ggml_matvec_rows (a programmatic dependent launch of the quantiser) on the stream.
Status launch(const CudaDevice& device, const Args& p);

}  // namespace dnnb::cuda_kernels::ggml_rows
