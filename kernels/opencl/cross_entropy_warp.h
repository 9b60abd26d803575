// The warp-per-row plan of cross_entropy for NVIDIA's OpenCL (cross_entropy_warp.cl): variants
// warp32nv (one row per warp) and warp32nvpipe (persistent warps, the next chunk's loads in flight
// across rows). It needs NVIDIA inline PTX (shfl.sync, max.bf16x2): on any other device the
// variants are skipped with that reason, never replaced by another kernel. For tests only,
// DNNB_OPENCL_WARP_EMULATE=1 builds it there with the shuffles emulated through local memory.
#pragma once
#include <cstdint>
#include "kernels/opencl/opencl_launch.h"

namespace dnnb::opencl {

struct CeWarpPlan {
  int warps = 8;            // warps (32 work-items) per work-group
  int vecs = 8;             // 16-byte vectors per lane in one chunk (4 KB per warp chunk for 8)
  bool persistent = false;  // a grid the GPU holds at once, rows strided; else one row per warp
  // -cl-nv-maxrregcount on NVIDIA (0: none); persistent plans take their groups per compute unit
  // from it (register file / (max_regs x work-group)): the grid is exactly what the GPU holds at once.
  int max_regs = 128;
};

// ok where the plan runs (an NVIDIA device with the PTX tier of prelude.cl, or the test emulation
// requested); else skipped with the reason.
Status ce_warp_supports(const DeviceRuntime& device);

// Runs ce_rows_warp over the logits view `lr` (targets: buffer, element offset, stride): each
// warp of the grid writes its (loss sum, kept rows) pair to `partial`, which must hold
// ce_warp_max_pairs(rows) pairs. Returns the number of pairs written, 0 when the view is not one
// the plan takes (strided columns, no columns, rows too long for int columns): the caller then
// takes its other plan. Fails with skipped on a device ce_warp_supports refuses.
Result<int64_t> try_ce_rows_warp(OpenCLDevice& device, const CeWarpPlan& plan, cl_mem logits, const ClRows& lr,
                                 cl_mem target, int64_t t_offset, int64_t t_stride, int64_t ignore_index,
                                 cl_mem partial);
// Upper bound of the pairs try_ce_rows_warp writes: one per warp of the grid, at most one group
// past the rows (warps per group <= 32).
inline int64_t ce_warp_max_pairs(int64_t rows) { return rows + 32; }

}  // namespace dnnb::opencl
