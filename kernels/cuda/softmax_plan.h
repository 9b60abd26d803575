// The row softmax's plans (softmax and cross_entropy_bwd variants) and the launch shape the
// default plan takes on a given device. Host-only, so the choice is unit-tested on machines
// without a GPU (tests/test_softmax_plan.cpp); the kernels are in softmax_rows.cuh.
#pragma once
#include <cstddef>

namespace dnnb::cuda_kernels {

// How a launcher places rows (the softmax variants).
enum class SoftmaxPlan {
  occ,       // variant "occ" (the default until 2026-11-21, session 3): softmax_regs_occ_kernel for
             // 1025..8192 columns with the approximate exp for f16/bf16 (expf for f32), else as reg2
  occ_expf,  // as occ with expf for every dtype (the previous 16-bit numerics)
  reg2,      // registers up to kMaxRegisterCols (2 rows per SM at 8192 columns), then the long
             // kernel with the z cache: the default before 2026-11-21
  smem,      // registers (warp per row) up to 1024 columns, then the long kernel with the z cache
  two_pass,  // the long kernel without the cache at every size: x read twice
  pipe,      // the default ("" variant; measured 2026-11-21 as variant "pipe": f32 297 us against
             // occ's 435, f16/bf16 161-163 against 283-287 at 16384 x 8192): softmax_pipe_kernel
             // where it applies (persistent blocks, rows prefetched into shared memory with
             // cp.async), every other shape as occ
  pipe32,    // as pipe, 32 columns per thread and 3 blocks per SM for every dtype (RowPipe32x3;
             // the default's shape for every dtype until 2026-11-21, session 4)
  pipe4,     // as pipe, 4 blocks per SM (RowPipe32x4)
  pipe16,    // as pipe, 16 columns per thread in blocks of up to 512 (RowPipe16x2)
  pipe16s3,  // as pipe16 with 3 stages (the 16-bit default until 2026-11-21, session 6)
  pipe16s4,  // as pipe16 with 4 stages (RowPipe16x2s4: the f32 softmax default since session 6)
};

// Whether `plan` runs softmax_pipe_kernel where the rows fit it (the pipe plans; the others never
// do). cross_entropy_bwd counts its kept rows inside that kernel only (softmax_rows.cuh).
inline bool is_pipe_plan(SoftmaxPlan plan) {
  return plan == SoftmaxPlan::pipe || plan == SoftmaxPlan::pipe32 || plan == SoftmaxPlan::pipe4 ||
         plan == SoftmaxPlan::pipe16 || plan == SoftmaxPlan::pipe16s3 || plan == SoftmaxPlan::pipe16s4;
}

// Devices whose DRAM is at least this fast (theoretical, 2 x memory clock x bus width) take the
// launch shapes tuned on the H200 (4.81 TB/s); slower ones take the H100's (3.35 TB/s). On the
// H200 more resident rows win: the bytes in flight must cover 1.4x the H100's rate with the same
// SMs. On the H100 fewer, fuller blocks win. bf16 at 16384 x 8192, each pair timed in one run:
//   softmax            H200 (2026-11-21, session 6): pipe16 142.6 us, pipe32 158.6
//                      H100 (2026-11-25, session 9): pipe16 208.7 us, pipe4 202.4, pipe32 203.2
//   cross_entropy_bwd  H200 (session 6): pipe4 150.1 us, pipe32 159.1
//                      H100 (session 9): pipe4 209.5 us, pipe32 195.1
// An unknown bandwidth (0) keeps the H200's shapes, the defaults before this rule.
inline constexpr double kRowPipeFastDramBytesPerS = 4.0e12;

// The plan `plan` runs as: every named variant as itself; the default (`pipe`) by element size,
// whether a target is given (cross_entropy_bwd) and the device's theoretical DRAM bandwidth.
inline SoftmaxPlan resolve_softmax_plan(SoftmaxPlan plan, size_t element_bytes, bool has_target,
                                        double dram_bytes_per_s) {
  if (plan != SoftmaxPlan::pipe) return plan;
  if (element_bytes == 2) {
    const bool fast_dram = dram_bytes_per_s <= 0 || dram_bytes_per_s >= kRowPipeFastDramBytesPerS;
    if (has_target) return fast_dram ? SoftmaxPlan::pipe4 : SoftmaxPlan::pipe32;
    return fast_dram ? SoftmaxPlan::pipe16 : SoftmaxPlan::pipe4;
  }
  // f32: softmax 16 columns a thread with 4 stages (session 6); cross_entropy_bwd the pipe
  // kernel's own shape (RowPipe32x3). Not re-tuned for slower DRAM: no H100 sweep of f32 yet.
  return has_target ? SoftmaxPlan::pipe : SoftmaxPlan::pipe16s4;
}

}  // namespace dnnb::cuda_kernels
