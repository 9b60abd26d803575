// Row softmax, shared by softmax and cross_entropy_bwd (whose gradient is a softmax minus a
// one-hot, scaled):
//   z = scale * (softcap > 0 ? softcap * tanh(x / softcap) : x) + mask
//   p = exp(z - max z) / sum exp(z - max z), and p = 0 when every z is -inf
//   y = (p - [c == target]) * row_scale
// Softmax has no target and row_scale 1 (y = p exactly); cross-entropy backward has the row's
// target and row_scale = 1 / kept rows (0 on ignored rows).
//
// Kernels (launch_softmax_rows picks the first that takes the row):
//  - pipe (rows of 1025..8192 columns, 16-byte aligned, whole 16-byte vectors):
//    softmax_pipe_kernel, the register kernel's row math in persistent blocks that prefetch the
//    next rows into shared memory (row_pipe.cuh); launch shape per dtype, op and device
//    (softmax_plan.h). f16/bf16 with the 2-instruction exp (cuda_common.cuh, exp_shifted_16bit).
//  - occupancy (other rows of 1025..8192 columns): softmax_regs_occ_kernel, 32 columns per thread
//    in registers, 3 rows per SM; f16/bf16 with the 2-instruction exp.
//  - registers (cols <= 16384): softmax_regs_kernel, the row read once into registers (EPT floats
//    per thread: 8 or 32, 16-byte loads), then max, exp and sum run on registers and the row is
//    written once. Bytes: x (+ mask) read once, y written once: the minimum. Launch shape:
//    register_rows_launch (cuda_common.cuh). expf for every dtype.
//  - long (cols > 16384): softmax_long_kernel, one block per row of about cols / 64 threads (32
//    to 512): long rows take 512 threads to keep 32 KB of loads in flight per SM. Pass 1 streams
//    the row keeping online statistics (running max m and sum s of exp(z - m), one rescale per
//    16-byte vector at most), merged across the block; pass 2 writes y. When the row's z fit in
//    shared memory (up to kSoftmaxCacheBytes / 4 = 51200 columns) pass 1 keeps them there and
//    pass 2 reads them back: x read once, y written once. Longer rows re-read x (and the mask) in
//    pass 2. Few long rows are split over several blocks: a stats launch writes (m, s) per chunk,
//    a write launch merges them (in a fixed order: deterministic) and writes its chunk (x read
//    twice; such problems are small enough to stay in L2). expf for every dtype.
// SoftmaxExp::expf (the variants "expf") skips the pipe kernel and takes expf in the occupancy
// kernel too.
#pragma once
#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/softmax_common.cuh"
#include "kernels/cuda/softmax_pipe.cuh"

namespace dnnb::cuda_kernels {

// Streaming kernel: 16 elements per thread per iteration (4 or 2 16-byte loads in flight).
template <typename T>
inline constexpr int kSoftmaxLongUnroll = 16 / kVec<T>;
inline constexpr int kSoftmaxLongThreads = 512;
inline constexpr int64_t kSoftmaxCacheBytes = 200 * 1024;  // of the H100/H200's 227 KB per block

// Register-resident rows: EPT elements per thread, `group` threads per row. The body is shared
// by softmax_regs_kernel and softmax_regs_occ_kernel, which differ in their launch bounds and
// in kFastExp: exp_shifted_16bit (cuda_common.cuh) instead of expf, only ever for f16/bf16.
template <typename T, int EPT, bool kFastExp = false>
__device__ __forceinline__ void softmax_regs_rows(const SoftmaxArgs<T>& a) {
  static_assert(!kFastExp || sizeof(T) == 2, "the approximate exp is for 16-bit outputs only");
  constexpr int W = kVec<T>;
  constexpr int VPT = EPT / W;
  __shared__ float scratch[2][32];
  const int group = a.group;
  const int t = threadIdx.x % group;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= a.rows) return;  // whole spare warps of the last block (warp-per-row only)
  const T* x_row = a.x.row(row);
  const T* mask_row = a.mask.data != nullptr ? a.mask.row(row) : nullptr;
  const int cols = static_cast<int>(a.cols);  // <= kMaxRegisterCols: 32-bit column math

  float z[VPT][W];
#pragma unroll
  for (int j = 0; j < VPT; ++j)
    load_logits<T, int>(z[j], a, x_row, mask_row, (j * group + t) * W, cols);

  const float m = block_row_max(z, group, scratch[0]);
  const float shift = m == -INFINITY ? 0.f : m;  // fully masked row: every exp is 0

  const float shift_log2e = shift * kLog2e;  // kFastExp: one rounding shared by the row
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      if constexpr (kFastExp)
        z[j][k] = exp_shifted_16bit(z[j][k], shift_log2e);
      else
        z[j][k] = expf(z[j][k] - shift);
      s += z[j][k];
    }
  s = group_reduce(s, SumOp{}, 0.f, group, scratch[1]);
  const float inv_sum = s > 0.f ? 1.f / s : 0.f;

  const RowOutput out = row_output(a, row);
  const int target = out.target >= 0 && out.target < cols ? static_cast<int>(out.target) : -1;
  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int c = (j * group + t) * W;
    if (c < cols) store_probs<T, int>(y_row, a, target, out.scale, c, cols, z[j], inv_sum);
  }
}

template <typename T, int EPT>
__global__ void __launch_bounds__(kRegisterRowsMaxThreads<EPT>, 1)
    softmax_regs_kernel(SoftmaxArgs<T> a) {
  softmax_regs_rows<T, EPT>(a);
}

// Rows of 1025..8192 columns the pipe kernel does not take (32 per thread, a block of <= 256
// threads per row): the launch bound asks for 3 blocks per SM (<= 80 registers) where
// softmax_regs_kernel gets 2 (95 / 123 registers at 256 threads), so loads of some rows overlap
// the reductions, exps and writes of others (1.25x faster than softmax_regs_kernel at 8192
// columns). kFastExp (f16/bf16 unless SoftmaxExp::expf): the 2-instruction exp, since 16-bit rows
// are issue-bound (cuda_common.cuh, exp_shifted_16bit).
inline constexpr int kSoftmaxOccThreads = 256;
inline constexpr int kSoftmaxOccMinBlocks = 3;  // <= 80 registers; 4 (64) spills 60-100 bytes
inline constexpr int64_t kSoftmaxOccMaxCols = kSoftmaxOccThreads * 32;

template <typename T, bool kFastExp>
__global__ void __launch_bounds__(kSoftmaxOccThreads, kSoftmaxOccMinBlocks)
    softmax_regs_occ_kernel(SoftmaxArgs<T> a) {
  softmax_regs_rows<T, 32, kFastExp>(a);
}

enum SoftmaxPhase : int {
  kSoftmaxStats = 0,  // write (m, s) of this block's chunk to partials
  kSoftmaxWrite = 1,  // merge the row's partials, write this block's chunk
  kSoftmaxFused = 2,  // one block per row: stats, then write
};

// Streaming rows of any length: one block per (row, chunk). With cache_z (fused phase only),
// dynamic shared memory holds the chunk's z as floats (chunk * 4 bytes).
template <typename T>
__global__ void __launch_bounds__(kSoftmaxLongThreads, 1)
    softmax_long_kernel(SoftmaxArgs<T> a, int phase) {
  constexpr int W = kVec<T>;
  extern __shared__ float4 cached_z4[];
  float* cached_z = reinterpret_cast<float*>(cached_z4);
  __shared__ float scratch[2][32];
  const int64_t row = blockIdx.x / a.splits;
  const int64_t c0 = (blockIdx.x % a.splits) * a.chunk;
  const int64_t c1 = c0 + a.chunk < a.cols ? c0 + a.chunk : a.cols;
  const int n = blockDim.x;
  const int t = threadIdx.x;
  const int64_t step = static_cast<int64_t>(n) * W;
  const T* x_row = a.x.row(row);
  const T* mask_row = a.mask.data != nullptr ? a.mask.row(row) : nullptr;

  float m = -INFINITY;
  float s = 0.f;
  if (phase == kSoftmaxWrite) {
    for (int64_t i = t; i < a.splits; i += n) {
      const float2 p = a.partials[row * a.splits + i];
      merge_max_sum(m, s, p.x, p.y);
    }
  } else {
    for (int64_t c = c0 + static_cast<int64_t>(t) * W; c < c1; c += step * kSoftmaxLongUnroll<T>) {
      float z[kSoftmaxLongUnroll<T>][W];
#pragma unroll
      for (int u = 0; u < kSoftmaxLongUnroll<T>; ++u)
        load_logits<T, int64_t>(z[u], a, x_row, mask_row, c + u * step, c1);
#pragma unroll
      for (int u = 0; u < kSoftmaxLongUnroll<T>; ++u) {
        if (a.cache_z && c + u * step < c1) {  // 16-byte stores: conflict-free across the warp
#pragma unroll
          for (int k = 0; k < W; k += 4)
            *reinterpret_cast<float4*>(cached_z + (c + u * step - c0) + k) =
                make_float4(z[u][k], z[u][k + 1], z[u][k + 2], z[u][k + 3]);
        }
        float vm = z[u][0];  // one rescale per vector at most: the vector's max first
#pragma unroll
        for (int k = 1; k < W; ++k) vm = fmaxf(vm, z[u][k]);
        if (vm > m) {
          s *= expf(m - vm);  // m == -inf: exp(-inf) = 0 and s was 0
          m = vm;
        }
        if (m != -INFINITY) {
#pragma unroll
          for (int k = 0; k < W; ++k) s += expf(z[u][k] - m);
        }
      }
    }
  }
  // The block reduction's barrier also orders the cache stores before the reads below (each
  // thread reads back only what it wrote, but the barrier is there anyway).
  group_reduce_max_sum(m, s, n, scratch[0], scratch[1]);
  if (phase == kSoftmaxStats) {
    if (t == 0) a.partials[blockIdx.x] = make_float2(m, s);
    return;
  }

  const float shift = m == -INFINITY ? 0.f : m;
  const float inv_sum = s > 0.f ? 1.f / s : 0.f;
  const RowOutput out = row_output(a, row);
  T* y_row = a.y.row(row);
  for (int64_t c = c0 + static_cast<int64_t>(t) * W; c < c1; c += step * 2) {
    float z[2][W];
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t cu = c + u * step;
      if (a.cache_z) {
        if (cu < c1) {
#pragma unroll
          for (int k = 0; k < W; k += 4) {
            const float4 q = *reinterpret_cast<const float4*>(cached_z + (cu - c0) + k);
            z[u][k] = q.x;
            z[u][k + 1] = q.y;
            z[u][k + 2] = q.z;
            z[u][k + 3] = q.w;
          }
        }
      } else {
        load_logits<T, int64_t>(z[u], a, x_row, mask_row, cu, c1);
      }
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int64_t cu = c + u * step;
      if (cu < c1) {
#pragma unroll
        for (int k = 0; k < W; ++k) z[u][k] = expf(z[u][k] - shift);
        store_probs<T, int64_t>(y_row, a, out.target, out.scale, cu, c1, z[u], inv_sum);
      }
    }
  }
}

// Which exp the row kernels take. fast16: f16/bf16 rows take the 2-instruction exp
// (exp_shifted_16bit) in the pipe and occupancy kernels (the defaults); expf: every row goes
// without the pipe kernel, whose 16-bit form is built on the approximate exp, and takes expf (the
// variants "expf"). f32 rows take expf either way.
enum class SoftmaxExp { fast16, expf };

// Picks the kernel and launch shape for `a` (x, mask, y, rows, cols and the math fields set).
template <typename T>
Status launch_softmax_rows(const CudaDevice& device, SoftmaxArgs<T> a, SoftmaxExp exp) {
  constexpr int W = kVec<T>;
  if (a.rows == 0 || a.cols == 0) return Status::ok();
  // cross_entropy_bwd: the kept-row count comes from inside the pipe kernel (grid), or, for the
  // other kernels, from the count kernel before them (kept_rows); anything else would read a
  // null count.
  const bool pipe = exp == SoftmaxExp::fast16 && softmax_pipe_fits(a) &&
                    (a.target == nullptr || a.grid != nullptr);
  if (a.target != nullptr && (a.grid != nullptr ? !pipe : a.kept_rows == nullptr))
    return Status::error("cuda cross_entropy_bwd: no kept-row count for this kernel (internal)");
  if (pipe) {
    auto launched = try_launch_softmax_pipe_shape<T>(device, a);
    if (!launched) return launched.status();
    if (*launched) return Status::ok();
    if (a.grid != nullptr)  // the other kernels read kept_rows (row_output)
      return Status::error(
          "cuda cross_entropy_bwd: the grid-count pipe kernel did not launch (no block fits)");
  }
  const int64_t want_blocks = 2LL * device.sm_count();
  if (a.cols > 32 * 32 && a.cols <= kSoftmaxOccMaxCols) {
    if (a.rows > INT32_MAX) return Status::unsupported("too many rows for one launch");
    const int block = static_cast<int>(round_up(ceil_div(a.cols, 32), 32));
    a.group = block;
    if constexpr (sizeof(T) == 2) {
      if (exp == SoftmaxExp::fast16)
        softmax_regs_occ_kernel<T, true>
            <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
      else
        softmax_regs_occ_kernel<T, false>
            <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
    } else {  // f32: expf
      softmax_regs_occ_kernel<T, false>
          <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
    }
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  if (a.cols <= kMaxRegisterCols) {
    const RegisterRowsLaunch l = register_rows_launch(a.rows, a.cols, device.sm_count());
    if (l.grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
    a.group = l.group;
    if (l.ept == 8)
      softmax_regs_kernel<T, 8><<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    else
      softmax_regs_kernel<T, 32><<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }

  a.splits = 1;
  a.chunk = round_up(a.cols, W);
  if (a.rows < want_blocks && a.cols >= 16384) {
    const int64_t splits = std::min(ceil_div(want_blocks, a.rows), ceil_div(a.cols, 8192));
    a.chunk = round_up(ceil_div(a.cols, splits), W);
    a.splits = ceil_div(a.cols, a.chunk);
  }
  // About four iterations of the streaming loop per thread, at most kSoftmaxLongThreads.
  const int block = static_cast<int>(
      std::clamp<int64_t>(round_up(ceil_div(a.chunk, 16 * 4), 32), 32, kSoftmaxLongThreads));
  const int64_t grid = a.rows * a.splits;
  if (grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
  if (a.splits == 1) {
    const int64_t cache_bytes = a.chunk * static_cast<int64_t>(sizeof(float));
    a.cache_z = cache_bytes <= kSoftmaxCacheBytes;
    const int smem = a.cache_z ? static_cast<int>(cache_bytes) : 0;
    if (smem > 48 * 1024)  // beyond the default limit a kernel must opt in
      DNNB_CUDA_TRY(cudaFuncSetAttribute(softmax_long_kernel<T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    softmax_long_kernel<T>
        <<<static_cast<unsigned>(grid), block, smem, device.stream()>>>(a, kSoftmaxFused);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  auto scratch = StreamScratch::allocate(device, sizeof(float2) * a.rows * a.splits);
  if (!scratch) return scratch.status();
  a.partials = scratch->as<float2>();
  softmax_long_kernel<T>
      <<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a, kSoftmaxStats);
  DNNB_CUDA_CHECK_LAUNCH();
  softmax_long_kernel<T>
      <<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a, kSoftmaxWrite);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

}  // namespace dnnb::cuda_kernels
