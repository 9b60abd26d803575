// The persistent row pipeline of the softmax / cross_entropy_bwd (softmax_pipe.cuh) and
// layernorm / rmsnorm (norm_pipe.cuh) kernels for rows of 1025..8192 columns.
//
// Why: the block-per-row register kernels are phase-bound, not DRAM-bound. A block loads its row
// (all loads in flight), then waits on block reductions and the exp / normalise pass, then
// stores; with 3-4 rows per SM the SM's read stream stops during those phases, and the next row's
// loads are only issued when a block finishes and a new one starts. Holding 4+ TB/s needs about
// 25-35 KB of reads in flight per SM at all times (~32 GB/s per SM x 0.6-1 us of loaded latency).
//
// Design: a grid of (blocks per SM x SMs) persistent blocks, each taking rows
// blockIdx.x, blockIdx.x + gridDim.x, ...; every block keeps kStages row buffers in dynamic
// shared memory and, before reducing row k, issues `cp.async.cg` 16-byte copies of row
// k + kStages - 1 into the buffer row k - 1 used. So kStages - 1 rows per block (32-64 KB per SM
// and more) are in flight while the block reduces and writes, and the copies land in shared
// memory, not registers, so they cost no occupancy.
//
// No barrier guards the buffers: each thread copies exactly the 16-byte vectors it later reads
// (vector j of thread t is column (j * blockDim.x + t) * kVec, as in the register kernels), and
// `cp.async.wait_group` makes a thread's own completed copies visible to it. A buffer is refilled
// only after this thread's reads of it were consumed by a block reduction of the previous row
// (program order plus that reduction's barrier), so no copy can overtake a read.
//
// Every thread commits exactly one group per row, possibly empty (past the last row, or a thread
// whose vectors all lie past the row's end), so `wait_group<kStages - 1>` at row k always means
// "the group holding row k is complete".
#pragma once
#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

// 16 bytes global -> shared, bypassing L1 (.cg: the row is used once from shared memory). Both
// addresses 16-byte aligned. Generic global addresses are valid global-window addresses.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most N of this thread's most recent groups are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Copies this thread's VPT vectors of one row into `stage` (same column layout as the row) and
// commits them as one group. x_row == nullptr (no such row): an empty group. kExact: the row
// is exactly group * VPT vectors, none past its end.
template <typename T, int VPT, bool kExact = false>
__device__ __forceinline__ void pipe_copy_row(T* stage, const T* x_row, int t, int group,
                                              int cols) {
  constexpr int W = kVec<T>;
  if (x_row != nullptr) {
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int c = (j * group + t) * W;
      if (kExact || c < cols) cp_async_16(stage + c, x_row + c);
    }
  }
  cp_async_commit();
}

// The launch shape of a pipe kernel: kEpt columns per thread (a block of cols / kEpt threads,
// at most kThreads for rows of 8192 columns), the blocks per SM its launch bound asks for
// (registers <= 64K / (kThreads * kMinBlocks)) and kStages row buffers per block. More warps per
// SM hide the block reductions' barriers (at 21 warps per SM the 16-bit softmax kernel had no
// eligible warp in a third of its cycles). 16-bit rows at 16 columns per thread run 2-6% faster
// with 2 stages than with 3; f32 softmax keeps its one block of 512 threads per SM fed with 4
// stages (3 rows, 96 KB, ahead). Which op and device takes which shape: softmax_plan.h,
// norm_pipe.cuh.
template <int kEptValue, int kMinBlocksValue, int kStagesValue = 2>
struct RowPipeShape {
  static constexpr int kEpt = kEptValue;
  static constexpr int kThreads = 8192 / kEptValue;
  static constexpr int kMinBlocks = kMinBlocksValue;
  static constexpr int kStages = kStagesValue;
};
using RowPipe32x3 = RowPipeShape<32, 3>;       // 256 threads, 3 blocks: <= 80 registers
using RowPipe32x4 = RowPipeShape<32, 4>;       // 256 threads, 4 blocks: <= 64 registers
using RowPipe16x2 = RowPipeShape<16, 2>;       // 512 threads, 2 blocks: <= 64 registers
using RowPipe16x2s4 = RowPipeShape<16, 2, 4>;  // 512 threads, 4 stages (f32: 1 block fits)
inline constexpr int64_t kRowPipeMaxCols = 8192;

// Stage index arithmetic without a modulo: the stage after s.
template <int kStages>
__device__ __forceinline__ int next_stage(int s) {
  return s + 1 == kStages ? 0 : s + 1;
}

// Host: blocks of `kernel` resident per SM with `block` threads and `smem` dynamic bytes, after
// opting the kernel into `max_smem` dynamic bytes (its largest launch, so the attribute never
// shrinks under a cached entry) and, when it uses shared memory, a carveout preference of all
// shared memory (the occupancy the grid is sized for is then the one the launch gets).
// Cached per (device, kernel, block, smem): the attribute calls and the occupancy query happen
// once, not inside every timed launch. 0 = the kernel cannot run with that shape.
inline Result<int> pipe_blocks_per_sm(const CudaDevice& device, const void* kernel, int block,
                                      int smem, int max_smem) {
  using Key = std::tuple<int, const void*, int, int>;
  static std::mutex mutex;
  static std::map<Key, int> cache;
  const Key key{device.ordinal(), kernel, block, smem};
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (max_smem > 0) {
    // Always opt in, even at <= 48 KB: the default limit counts static shared memory too (48 KB
    // of stages plus the reduction scratch do not fit it: occupancy 0).
    DNNB_CUDA_TRY(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
    // Row buffers: all of the SM's shared memory, so the occupancy is certain.
    DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
  }
  int blocks = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block,
                                                              static_cast<size_t>(smem)));
  cache[key] = blocks;
  return blocks;
}

// How launch_persistent_rows launches: `cooperative`, a cooperative launch, for a kernel whose
// blocks wait for each other (every block resident at once, or the launch fails with an error
// instead of hanging).
enum class PersistentLaunch { plain, cooperative };

// Launches `kernel(a)` as persistent blocks of `block` threads, one row per block at a time:
// as many blocks per SM as fit with `smem` bytes of dynamic shared memory (pipe_blocks_per_sm),
// at most one per row. False, nothing launched, when no block fits (the caller takes another
// kernel).
template <typename Kernel, typename Args>
Result<bool> launch_persistent_rows(const CudaDevice& device, Kernel kernel, int block, int smem,
                                    int max_smem, int64_t rows, const Args& a,
                                    PersistentLaunch how = PersistentLaunch::plain) {
  auto per_sm =
      pipe_blocks_per_sm(device, reinterpret_cast<const void*>(kernel), block, smem, max_smem);
  if (!per_sm) return per_sm.status();
  if (*per_sm == 0) return false;
  const int64_t grid = std::min<int64_t>(rows, static_cast<int64_t>(*per_sm) * device.sm_count());
  if (how == PersistentLaunch::plain) {
    kernel<<<static_cast<unsigned>(grid), block, smem, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return true;
  }
  cudaLaunchAttribute cooperative{};
  cooperative.id = cudaLaunchAttributeCooperative;
  cooperative.val.cooperative = 1;
  DNNB_TRY(launch_with_attribute(device, kernel, static_cast<unsigned>(grid), static_cast<unsigned>(block),
                                 static_cast<size_t>(smem), cooperative, a));
  return true;
}

}  // namespace dnnb::cuda_kernels
