// Which launch shape softmax_pipe_kernel (softmax_pipe.cuh) takes for a dtype, op and device.
// Host-only, so the rule is unit-tested on machines without a GPU (tests/test_softmax_plan.cpp).
#pragma once
#include <cstddef>

namespace dnnb::cuda_kernels {

// The pipe kernel's launch shapes (row_pipe.cuh, RowPipeShape): columns per thread, blocks per
// SM, row stages per block.
enum class SoftmaxPipeShape {
  cols16_blocks2,          // RowPipe16x2: 512 threads, 2 blocks per SM, 2 stages
  cols16_blocks2_stages4,  // RowPipe16x2s4: as above with 4 stages (f32: one block per SM)
  cols32_blocks3,          // RowPipe32x3: 256 threads, 3 blocks per SM
  cols32_blocks4,          // RowPipe32x4: 256 threads, 4 blocks per SM
};

// Devices whose DRAM is at least this fast (theoretical, 2 x memory clock x bus width) take the
// 16-bit shapes that suit the H200 (4.8 TB/s); slower ones those that suit the H100 (3.35 TB/s).
// The H200 moves 1.4 times the H100's bytes with the same SMs, so it needs more bytes in flight,
// which more resident blocks give; on the H100 fewer, fuller blocks are faster. bf16 at 16384 x
// 8192: softmax on the H200 takes 142.6 us at 16 columns a thread against 158.6 at 32 with 3
// blocks an SM; on the H100 16 columns take 208.7 us against 202.4 at 32 with 4 blocks.
// cross_entropy_bwd (more work per row: the one-hot and the row scale) on the H200 takes 150.1 us
// at 32 columns with 4 blocks against 159.1 with 3; on the H100 195.1 with 3 against 209.5 with 4.
// An unknown bandwidth (0) takes the H200's shapes.
inline constexpr double kRowPipeFastDramBytesPerS = 4.0e12;

// The shape for rows of `element_bytes` (2 or 4), softmax or cross_entropy_bwd (`has_target`), on
// a device whose theoretical DRAM bandwidth is `dram_bytes_per_s`. f32 has one shape per op on
// every device: softmax keeps one block of 512 threads per SM fed by 4 stages, cross_entropy_bwd
// 3 blocks of 256.
inline SoftmaxPipeShape softmax_pipe_shape(size_t element_bytes, bool has_target,
                                           double dram_bytes_per_s) {
  if (element_bytes == 2) {
    const bool fast_dram = dram_bytes_per_s <= 0 || dram_bytes_per_s >= kRowPipeFastDramBytesPerS;
    if (has_target)
      return fast_dram ? SoftmaxPipeShape::cols32_blocks4 : SoftmaxPipeShape::cols32_blocks3;
    return fast_dram ? SoftmaxPipeShape::cols16_blocks2 : SoftmaxPipeShape::cols32_blocks4;
  }
  return has_target ? SoftmaxPipeShape::cols32_blocks3 : SoftmaxPipeShape::cols16_blocks2_stages4;
}

}  // namespace dnnb::cuda_kernels
