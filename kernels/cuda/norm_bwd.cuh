// The backward of layernorm (centered: x - mean, and db) and rmsnorm (weight offset 1 for the
// Gemma form) on CUDA: one pair of kernels for both, launched by layernorm_bwd.cu and
// rmsnorm_bwd.cu. From the forward's saved statistics (mean, rstd: f32 per row):
//
// norm_bwd_rows_kernel: block b takes the rows [b T, (b + 1) T) (T = rows per tile, so that the
//   grid is one wave of resident blocks, at most kNormBwdMaxBlocksPerSm per SM) one at a time with all its 256 threads:
//   pass 1: the block-wide sums of g = dy (w + offset) and g xhat, xhat = (x - mean) rstd
//           (16-byte loads where the rows allow);
//   pass 2: dx = rstd ((g - xhat mean(g xhat)) - mean(g)) (x, dy, w read again, from L1/L2), and
//           dy xhat, dy added to the block's f32 column sums. Each thread owns the same columns
//           in every row, so the sums need no atomics and no barrier: they live in shared memory
//           (laid out thread-fastest, conflict-free) up to kSharedSumBytes, else in the block's
//           row of the partial sums in global memory. At the end the block writes its row of
//           partial sums: parts[b][s][c] (s = 0 for dw, 1 for db).
// norm_bwd_columns_kernel: dw[c] (db[c]) = the tiles' partial sums of column c added in a fixed
//   order (8 threads per column over interleaved tiles, then their 8 sums in order), rounded once.
// No atomics and a fixed launch shape for a given problem and device: bitwise reproducible.
#pragma once
#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

inline constexpr int kNormBwdThreads = 256;
// Column sums in shared memory up to this size (2 x 12288 columns for layernorm, 24576 for
// rmsnorm); longer rows keep them in global memory.
inline constexpr int64_t kSharedSumBytes = 96 * 1024;
inline constexpr int kColumnThreadsX = 32, kColumnThreadsY = 8;
inline constexpr int kNormBwdMaxBlocksPerSm = 4;

template <typename T>
struct NormBwdArgs {
  RowView<T> x, dy, dx, w;
  RowView<float> mean, rstd;  // mean unused when not centered
  int64_t rows = 0, cols = 0, rows_per_tile = 1;
  float weight_offset = 0;
  float* parts = nullptr;  // [tiles][sums][cols]
};

// Sum slot of element k of chunk j of this thread: thread-fastest in shared memory, the column
// itself in global memory.
template <typename T, bool kShared>
__device__ __forceinline__ int64_t norm_bwd_slot(int64_t j, int k, int64_t c) {
  if constexpr (kShared) return (j * kVec<T> + k) * kNormBwdThreads + threadIdx.x;
  return c + k;
}

template <typename T, bool kCentered, bool kShared>
__global__ void __launch_bounds__(kNormBwdThreads) norm_bwd_rows_kernel(NormBwdArgs<T> a) {
  extern __shared__ float shared_sums[];
  __shared__ float scratch[2][2][32];  // [row parity][sum]: see the reductions below
  constexpr int kSums = kCentered ? 2 : 1;
  constexpr int V = kVec<T>;
  const int64_t cols = a.cols;
  const int64_t span = static_cast<int64_t>(kNormBwdThreads) * V;  // columns per chunk step
  const int64_t chunks = (cols + span - 1) / span;
  const int64_t sum_stride = kShared ? chunks * span : cols;  // elements per sum
  float* sums = kShared ? shared_sums : a.parts + static_cast<int64_t>(blockIdx.x) * kSums * cols;
  for (int64_t j = 0; j < chunks; ++j) {
    const int64_t c = (j * kNormBwdThreads + threadIdx.x) * V;
#pragma unroll
    for (int k = 0; k < V; ++k)
      if (c + k < cols)
#pragma unroll
        for (int s = 0; s < kSums; ++s) sums[s * sum_stride + norm_bwd_slot<T, kShared>(j, k, c)] = 0.f;
  }
  const T* wrow = a.w.row(0);
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * a.rows_per_tile;
  const int64_t r1 = min(a.rows, r0 + a.rows_per_tile);
  const float inv_cols = 1.f / static_cast<float>(cols);
  for (int64_t r = r0; r < r1; ++r) {
    const T* xrow = a.x.row(r);
    const T* dyrow = a.dy.row(r);
    T* dxrow = a.dx.row(r);
    const float rstd = a.rstd.row(r)[0];
    const float mean = kCentered ? a.mean.row(r)[0] : 0.f;
    float sum_g = 0.f, sum_gx = 0.f;
    for (int64_t j = 0; j < chunks; ++j) {
      const int64_t c = (j * kNormBwdThreads + threadIdx.x) * V;
      if (c >= cols) break;
      float xv[V], dyv[V], wv[V];
      load_vec<T, int64_t>(xv, a.x, xrow, c, cols, 0.f);
      load_vec<T, int64_t>(dyv, a.dy, dyrow, c, cols, 0.f);  // 0 past the row: adds nothing
      load_vec<T, int64_t>(wv, a.w, wrow, c, cols, 0.f);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float g = dyv[k] * (wv[k] + a.weight_offset);
        sum_g += g;
        sum_gx = fmaf(g, (xv[k] - mean) * rstd, sum_gx);
      }
    }
    // Two block reductions, each with its own scratch, alternating by row: a warp that runs
    // ahead into the next row's reduction writes the other half, and can reach this half again
    // only after every warp has passed the next row's barrier, i.e. has read this row's values.
    const int parity = static_cast<int>((r - r0) & 1);
    const float mean_g = kCentered ? group_reduce(sum_g, SumOp{}, 0.f, kNormBwdThreads, scratch[parity][0]) * inv_cols : 0.f;
    const float mean_gx = group_reduce(sum_gx, SumOp{}, 0.f, kNormBwdThreads, scratch[parity][1]) * inv_cols;
    for (int64_t j = 0; j < chunks; ++j) {
      const int64_t c = (j * kNormBwdThreads + threadIdx.x) * V;
      if (c >= cols) break;
      float xv[V], dyv[V], wv[V], out[V];
      load_vec<T, int64_t>(xv, a.x, xrow, c, cols, 0.f);
      load_vec<T, int64_t>(dyv, a.dy, dyrow, c, cols, 0.f);
      load_vec<T, int64_t>(wv, a.w, wrow, c, cols, 0.f);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float xhat = (xv[k] - mean) * rstd;
        const float g = dyv[k] * (wv[k] + a.weight_offset);
        // g enters only as an FMA's addend: the rounded product of pass 1, so a one-column row
        // gives g - mean(g) = 0 exactly (a contracted dy w - mean(g) would not).
        out[k] = rstd * (fmaf(-xhat, mean_gx, g) - mean_g);
        if (c + k < cols) {
          const int64_t slot = norm_bwd_slot<T, kShared>(j, k, c);
          sums[slot] = fmaf(dyv[k], xhat, sums[slot]);
          if constexpr (kCentered) sums[sum_stride + slot] += dyv[k];
        }
      }
      store_vec<T, int64_t>(dxrow, a.dx, c, cols, out);
    }
  }
  if constexpr (kShared) {
    float* part = a.parts + static_cast<int64_t>(blockIdx.x) * kSums * cols;
    for (int64_t j = 0; j < chunks; ++j) {
      const int64_t c = (j * kNormBwdThreads + threadIdx.x) * V;
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (c + k < cols)
#pragma unroll
          for (int s = 0; s < kSums; ++s)
            part[s * cols + c + k] = sums[s * sum_stride + norm_bwd_slot<T, true>(j, k, c)];
    }
  }
}

// out_s[c] for s = blockIdx.y: the sum over tiles of parts[t][s][c], in a fixed order.
template <typename T>
__global__ void __launch_bounds__(kColumnThreadsX* kColumnThreadsY)
    norm_bwd_columns_kernel(const float* parts, int64_t tiles, int64_t sums, int64_t cols, T* dw, int64_t dw_stride,
                            T* db, int64_t db_stride) {
  __shared__ float partial[kColumnThreadsY][kColumnThreadsX];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumnThreadsX + threadIdx.x;
  const int64_t s = blockIdx.y;
  float total = 0.f;
  if (c < cols)
#pragma unroll 4
    for (int64_t t = threadIdx.y; t < tiles; t += kColumnThreadsY) total += parts[(t * sums + s) * cols + c];
  partial[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  total = partial[0][threadIdx.x];
#pragma unroll
  for (int y = 1; y < kColumnThreadsY; ++y) total += partial[y][threadIdx.x];
  if (s == 0) dw[c * dw_stride] = from_float<T>(total);
  else db[c * db_stride] = from_float<T>(total);
}

// Blocks of the rows kernel resident per SM with `smem` bytes of dynamic shared memory, asked
// once per (kernel, bytes, device). The kernel's dynamic shared memory limit is raised once per
// (kernel, device) to the most any launch asks (kSharedSumBytes), never lowered: a limit set for
// one problem's bytes would refuse a later problem's larger launch (cudaErrorInvalidValue).
inline Result<int> norm_bwd_blocks_per_sm(const void* kernel, size_t smem, const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, size_t, int>, int> known;
  static std::set<std::pair<const void*, int>> raised;
  std::lock_guard<std::mutex> lock(mutex);
  if (raised.count({kernel, device.ordinal()}) == 0) {
    DNNB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kSharedSumBytes)));
    raised.insert({kernel, device.ordinal()});
  }
  const auto key = std::make_tuple(kernel, smem, device.ordinal());
  if (auto it = known.find(key); it != known.end()) return it->second;
  int per_sm = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kNormBwdThreads, smem));
  known[key] = std::max(per_sm, 1);
  return known[key];
}

// The tiles of the rows kernel (one wave of resident blocks, at most one per row); sets
// a.rows_per_tile.
template <typename T, bool kCentered, bool kShared>
Result<int64_t> norm_bwd_tiles(const CudaDevice& dev, NormBwdArgs<T>& a, size_t smem) {
  const void* kernel = reinterpret_cast<const void*>(&norm_bwd_rows_kernel<T, kCentered, kShared>);
  auto per_sm = norm_bwd_blocks_per_sm(kernel, smem, dev);
  if (!per_sm) return per_sm.status();
  // At most 4 blocks per SM: enough warps to cover each row's two barriers, and each tile's
  // partial sums (8 bytes per column for layernorm) stay a small share of the traffic: at 8192 x
  // 4096 bf16 with 132 SMs, 17 MB written and read against the rows' 201 MB.
  const int64_t wave = static_cast<int64_t>(std::min(*per_sm, kNormBwdMaxBlocksPerSm)) * dev.sm_count();
  a.rows_per_tile = ceil_div(a.rows, std::min(a.rows, wave));
  return ceil_div(a.rows, a.rows_per_tile);
}

// inputs x, w, dy, [mean,] rstd; outputs dx, dw, [db] (docs/ops-family1.md).
template <bool kCentered>
Status run_norm_bwd(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  const CudaDevice& dev = **device;
  const std::string& op = call.problem.op;
  const std::string form = call.problem.get("form", "torch");
  if (form != "torch" && form != "gemma") return Status::bad_input(op + ": form=" + form + " is not torch or gemma");
  constexpr size_t kInputs = kCentered ? 5 : 4, kOutputs = kCentered ? 3 : 2;
  if (call.inputs.size() != kInputs || call.outputs.size() != kOutputs)
    return Status::bad_input("cuda " + op + ": expected " + std::to_string(kInputs) + " inputs and " +
                             std::to_string(kOutputs) + " outputs");
  const DType dtype = call.problem.dtype;
  for (const auto& [t, name] : {std::pair{&call.inputs[0], "x"}, {&call.inputs[1], "w"}, {&call.inputs[2], "dy"},
                                {&call.outputs[0], "dx"}, {&call.outputs[1], "dw"}})
    DNNB_TRY(expect_tensor(*t, dtype, name));
  DNNB_TRY(expect_tensor(call.inputs[kInputs - 1], DType::f32, "rstd"));
  if (kCentered) {
    DNNB_TRY(expect_tensor(call.inputs[3], DType::f32, "mean"));
    DNNB_TRY(expect_tensor(call.outputs[2], dtype, "db"));
  }
  const Tensor& x = call.inputs[0];
  const int64_t cols = x.shape.empty() ? 1 : x.shape.back();
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  if (call.inputs[2].shape != x.shape || call.outputs[0].shape != x.shape || call.inputs[1].shape != Shape{cols} ||
      call.outputs[1].shape != Shape{cols} || call.inputs[kInputs - 1].numel() != rows)
    return Status::bad_input("cuda " + op + ": expected x, dy, dx [..., N], w, dw [N] and one statistic per row");
  if (rows == 0) return Status::ok();
  return dispatch_float(dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    NormBwdArgs<T> a;
    auto xv = make_row_view<T>(x);
    if (!xv) return xv.status();
    auto dyv = make_row_view<T>(call.inputs[2]);
    if (!dyv) return dyv.status();
    auto dxv = make_row_view<T>(call.outputs[0]);
    if (!dxv) return dxv.status();
    auto wv = make_row_view<T>(call.inputs[1]);
    if (!wv) return wv.status();
    auto rstd = make_row_view<float>(call.inputs[kInputs - 1]);
    if (!rstd) return rstd.status();
    auto mean = make_row_view<float>(call.inputs[kCentered ? 3 : kInputs - 1]);  // rmsnorm: unused
    if (!mean) return mean.status();
    a.x = *xv;
    a.dy = *dyv;
    a.dx = *dxv;
    a.w = *wv;
    a.rstd = *rstd;
    a.mean = *mean;
    a.rows = rows;
    a.cols = cols;
    a.weight_offset = form == "gemma" ? 1.f : 0.f;
    constexpr int64_t kSums = kCentered ? 2 : 1;
    const int64_t span = static_cast<int64_t>(kNormBwdThreads) * kVec<T>;
    const size_t smem = static_cast<size_t>(kSums * round_up(cols, span)) * sizeof(float);
    const bool shared = static_cast<int64_t>(smem) <= kSharedSumBytes;
    auto tiles = shared ? norm_bwd_tiles<T, kCentered, true>(dev, a, smem) : norm_bwd_tiles<T, kCentered, false>(dev, a, 0);
    if (!tiles) return tiles.status();
    auto partial = StreamScratch::allocate(dev, static_cast<size_t>(*tiles * kSums * cols) * sizeof(float));
    if (!partial) return partial.status();
    a.parts = partial->template as<float>();
    if (shared)
      norm_bwd_rows_kernel<T, kCentered, true><<<static_cast<unsigned>(*tiles), kNormBwdThreads, smem, dev.stream()>>>(a);
    else
      norm_bwd_rows_kernel<T, kCentered, false><<<static_cast<unsigned>(*tiles), kNormBwdThreads, 0, dev.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    const Tensor& dw = call.outputs[1];
    const Tensor* db = kCentered ? &call.outputs[2] : &call.outputs[1];
    const dim3 grid(static_cast<unsigned>(ceil_div(cols, kColumnThreadsX)), static_cast<unsigned>(kSums));
    norm_bwd_columns_kernel<T><<<grid, dim3(kColumnThreadsX, kColumnThreadsY), 0, dev.stream()>>>(
        a.parts, *tiles, kSums, cols, data_ptr<T>(dw), dw.strides[0], data_ptr<T>(*db),
        db->strides[0]);
    DNNB_CUDA_CHECK_LAUNCH();
    return partial->release();
  });
}

}  // namespace dnnb::cuda_kernels
