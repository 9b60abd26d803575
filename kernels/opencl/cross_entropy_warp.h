// cross_entropy's per-row losses with one warp per row (cross_entropy_warp.cl), the bf16 default
// on NVIDIA's OpenCL: a persistent grid of warps, each folding its rows in 4 KB chunks with the
// next chunk's loads in flight, its lanes' statistics merged by warp shuffles (no local memory, no
// barrier). It needs NVIDIA inline PTX (shfl.sync, max.bf16x2); for tests only,
// DNNB_OPENCL_WARP_EMULATE=1 builds it on any other device with the shuffles emulated through
// local memory.
#pragma once
#include <cstdint>
#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

// True where the warp kernel runs: a device with the PTX tier of prelude.cl (bf16_nv_ptx), or any
// device while DNNB_OPENCL_WARP_EMULATE=1.
bool ce_warp_available(const OpenCLDevice& device);

// Runs ce_rows_warp over the logits view `lr` (targets: buffer, element offset, stride): each
// warp of the grid writes its (loss sum, kept rows) pair to `partial`, which must hold
// ce_warp_max_pairs(rows) pairs. Returns the number of pairs written, 0 when the view is not one
// the kernel takes (strided columns, no columns, rows too long for int columns): the caller then
// takes its other kernels. Fails with skipped on a device where ce_warp_available is false.
Result<int64_t> try_ce_rows_warp(OpenCLDevice& device, cl_mem logits, const ClRows& lr, cl_mem target,
                                 int64_t t_offset, int64_t t_stride, int64_t ignore_index, cl_mem partial);
// Upper bound of the pairs try_ce_rows_warp writes: one per warp of the grid, at most one group
// past the rows.
inline int64_t ce_warp_max_pairs(int64_t rows) { return rows + 32; }

}  // namespace dnnb::opencl
