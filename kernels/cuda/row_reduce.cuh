// Reductions over the last dim (sum, mean, max, norm2): y[r] = finish(combine_c pre(x[r, c])).
// Each op file supplies a Reducer:
//   pad()      value read for columns past the end (pre(pad) must be the identity)
//   identity() neutral element of combine
//   pre(x)     per-element transform (x, or x*x for norm2)
//   combine    associative, commutative, f32
//   finish(acc, cols)  final value (mean divides, norm2 takes the square root)
//
// Kernels, chosen by dtype and shape (launch_row_reduce):
//  - warp per row, any length (row_reduce_warp_kernel): f16/bf16 rows of more than 1024 columns
//    when there are rows for 32 warps per SM. f32 takes row_reduce_kernel, which already reads at
//    the device's read rate there (above 100% of copy) and is no slower than the warp kernel.
//  - row_reduce_kernel, three launch shapes chosen by the row length:
//    - warp per row (cols <= 1024): 8 rows per 256-thread block, no shared memory or barrier.
//    - block per row: 64..512 threads stream the row with kReduceUnroll 16-byte loads in flight
//      each.
//    - split rows (few long rows, e.g. a 1-D input): `splits` blocks per row each reduce one
//      chunk to a partial in scratch memory, then a finalize kernel (one warp per row) combines
//      the partials in a fixed order. Deterministic; no atomics.
// Bytes moved: the input once plus rows * sizeof(T) (and 4 bytes per partial when split): a pure
// streaming read.
#pragma once
#include <algorithm>
#include <optional>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

inline constexpr int kReduceUnroll = 4;

template <typename T>
struct ReduceArgs {
  RowView<T> x;
  T* y;             // rows outputs, contiguous
  float* partials;  // rows * splits, when splits > 1
  int64_t rows;
  int64_t cols;
  int64_t splits;  // chunks per row
  int64_t chunk;   // columns per chunk, a multiple of kVec<T>
  int group;       // threads per row chunk: 32 (warp per row) or blockDim.x
};

template <typename T, typename R>
__global__ void __launch_bounds__(512) row_reduce_kernel(ReduceArgs<T> a, R red) {
  constexpr int W = kVec<T>;
  __shared__ float scratch[32];
  const int group = a.group;
  const int t = threadIdx.x % group;
  const int64_t unit =
      static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  const bool active = unit < a.rows * a.splits;  // false only for spare warps of the last block
  float acc = red.identity();
  if (active) {
    const int64_t row = unit / a.splits;
    const int64_t c0 = (unit % a.splits) * a.chunk;
    const int64_t c1 = c0 + a.chunk < a.cols ? c0 + a.chunk : a.cols;
    const T* xr = a.x.row(row);
    const int64_t step = static_cast<int64_t>(group) * W;
    for (int64_t c = c0 + static_cast<int64_t>(t) * W; c < c1; c += step * kReduceUnroll) {
      float v[kReduceUnroll][W];
#pragma unroll
      for (int u = 0; u < kReduceUnroll; ++u)
        load_vec<T>(v[u], a.x, xr, c + u * step, c1, red.pad());
#pragma unroll
      for (int u = 0; u < kReduceUnroll; ++u)
#pragma unroll
        for (int k = 0; k < W; ++k) acc = red.combine(acc, red.pre(v[u][k]));
    }
  }
  acc = group_reduce(
      acc, [&](float p, float q) { return red.combine(p, q); }, red.identity(), group, scratch);
  if (active && t == 0) {
    if (a.splits == 1)
      a.y[unit] = from_float<T>(red.finish(acc, a.cols));
    else
      a.partials[unit] = acc;
  }
}

// Warp per row (many 16-bit rows of more than 1024 columns): one warp per row for any row
// length, each lane keeping kReduceWarpUnroll = 8 raw 16-byte vectors in flight (128 bytes, 4 KB
// per warp, 128 KB per SM at the launch bound's 4 blocks of 8 warps: a read stream needs that
// many bytes in flight per SM to approach the device's read rate; half of it reached about 77% of
// copy) and looping along the row: the loads stream without block barriers or block launches
// between rows, and raw vectors (converted at use) cost 4 registers each instead of 8 for 16-bit
// types. Whole iterations of a vectorizable row (every lane's 8 vectors inside the row, a
// warp-uniform test) load without per-vector or per-element checks, which keeps the 8 raw vectors
// within the launch bound's 64 registers; the rest of the row (less than one iteration) takes the
// checked loop kReduceWarpCheckedUnroll vectors at a time. Each lane visits its vectors in column
// order, then a butterfly: deterministic, though its sums differ from the block kernel's in the
// last bits (another order).
inline constexpr int kReduceWarpUnroll = 8;
inline constexpr int kReduceWarpCheckedUnroll = 2;
inline constexpr int kReduceWarpBlock = 256;

template <typename T, typename R>
__global__ void __launch_bounds__(kReduceWarpBlock, 4) row_reduce_warp_kernel(ReduceArgs<T> a, R red) {
  constexpr int W = kVec<T>;
  constexpr int U = kReduceWarpUnroll;
  constexpr int UC = kReduceWarpCheckedUnroll;
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kReduceWarpBlock / 32) + (threadIdx.x >> 5);
  if (row >= a.rows) return;  // whole warps: no shuffle is left waiting
  const T* xr = a.x.row(row);
  const float pad_value = red.pad();
  float acc = red.identity();
  constexpr int64_t kStep = 32 * W;
  int64_t c = static_cast<int64_t>(lane) * W;
  if (a.x.vec) {
    const Vec16<T>* xv = reinterpret_cast<const Vec16<T>*>(xr);  // vec: 16-byte aligned rows
    for (; c - lane * W + kStep * U <= a.cols; c += kStep * U) {
      Vec16<T> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = xv[(c + u * kStep) / W];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < W; ++k) acc = red.combine(acc, red.pre(element_float(v[u], k)));
    }
  }
  for (; c < a.cols; c += kStep * UC) {
    Vec16<T> v[UC];
#pragma unroll
    for (int u = 0; u < UC; ++u)
      if (c + u * kStep < a.cols)
        load_raw_vec<T, int64_t>(v[u], xr, a.x.ri.col_stride, a.x.vec, c + u * kStep, a.cols, 0.f);
#pragma unroll
    for (int u = 0; u < UC; ++u) {
      const int64_t left = a.cols - (c + u * kStep);  // columns from this vector on
#pragma unroll
      for (int k = 0; k < W; ++k)
        acc = red.combine(acc, red.pre(k < left ? element_float(v[u], k) : pad_value));
    }
  }
  acc = warp_reduce(acc, [&](float p, float q) { return red.combine(p, q); });
  if (lane == 0) a.y[row] = from_float<T>(red.finish(acc, a.cols));
}

// One warp per row combines that row's `splits` partials (lanes stride, then a butterfly).
template <typename T, typename R>
__global__ void __launch_bounds__(32) row_reduce_finalize_kernel(ReduceArgs<T> a, R red) {
  const int64_t row = blockIdx.x;
  float acc = red.identity();
  for (int64_t i = threadIdx.x; i < a.splits; i += 32)
    acc = red.combine(acc, a.partials[row * a.splits + i]);
  acc = warp_reduce(acc, [&](float p, float q) { return red.combine(p, q); });
  if (threadIdx.x == 0) a.y[row] = from_float<T>(red.finish(acc, a.cols));
}

template <typename T, typename R>
Status launch_row_reduce(const CudaDevice& device, const Tensor& x, const Tensor& y, const R& red) {
  constexpr int W = kVec<T>;
  auto view = make_row_view<T>(x);
  if (!view) return view.status();
  ReduceArgs<T> a{};
  a.x = *view;
  a.y = data_ptr<T>(y);
  a.rows = view->ri.rows;
  a.cols = view->ri.cols;
  if (a.rows == 0) return Status::ok();
  if (y.numel() != a.rows || !y.is_contiguous())
    return Status::bad_input("cuda " + std::string("reduction: output ") + y.describe() +
                             " is not a contiguous tensor of " + std::to_string(a.rows) + " rows");
  a.splits = 1;
  a.chunk = round_up(std::max<int64_t>(a.cols, 1), W);
  if constexpr (sizeof(T) == 2) {  // f32 reads at the device's read rate with the block kernel
    if (a.cols > 1024 && a.rows >= 32LL * device.sm_count()) {
      a.group = 32;
      const int64_t warp_grid = ceil_div(a.rows, kReduceWarpBlock / 32);
      if (warp_grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
      row_reduce_warp_kernel<T, R>
          <<<static_cast<unsigned>(warp_grid), kReduceWarpBlock, 0, device.stream()>>>(a, red);
      DNNB_CUDA_CHECK_LAUNCH();
      return Status::ok();
    }
  }
  int block = 256;
  int64_t grid = 0;
  if (a.cols <= 1024) {
    a.group = 32;
    grid = ceil_div(a.rows, block / 32);
  } else {
    // Few long rows cannot fill the GPU with one block each: split them into chunks of at
    // least 8K columns until there are about two blocks per SM.
    const int64_t want_blocks = 2LL * device.sm_count();
    if (a.rows < want_blocks && a.cols >= 16384) {
      const int64_t splits = std::min(ceil_div(want_blocks, a.rows), ceil_div(a.cols, 8192));
      a.chunk = round_up(ceil_div(a.cols, splits), W);
      a.splits = ceil_div(a.cols, a.chunk);
    }
    const int64_t vectors = ceil_div(a.chunk, W);
    block = static_cast<int>(
        std::clamp<int64_t>(round_up(ceil_div(vectors, kReduceUnroll), 32), 64, 512));
    a.group = block;
    grid = a.rows * a.splits;
  }
  if (grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
  std::optional<StreamScratch> scratch;
  if (a.splits > 1) {
    auto allocated = StreamScratch::allocate(device, sizeof(float) * a.rows * a.splits);
    if (!allocated) return allocated.status();
    scratch.emplace(std::move(*allocated));
    a.partials = scratch->as<float>();
  }
  row_reduce_kernel<T, R><<<static_cast<unsigned>(grid), block, 0, device.stream()>>>(a, red);
  DNNB_CUDA_CHECK_LAUNCH();
  if (!scratch) return Status::ok();
  row_reduce_finalize_kernel<T, R>
      <<<static_cast<unsigned>(a.rows), 32, 0, device.stream()>>>(a, red);
  DNNB_CUDA_CHECK_LAUNCH();
  return scratch->release();
}

// Registers reduction `op_name` (x [..., N] -> y [...]) for f32, f16 and bf16.
template <typename R>
bool register_row_reduce(const char* op_name, R red) {
  return register_cuda(op_name, "", "", {DType::f32, DType::f16, DType::bf16}, [red](OpCall& call) {
    auto device = cuda_device_of(call);
    if (!device) return device.status();
    if (call.inputs.size() != 1 || call.outputs.size() != 1)
      return Status::bad_input("cuda " + call.problem.op + ": expected input x and output y");
    DNNB_TRY(expect_tensor(call.inputs[0], call.problem.dtype, "x"));
    DNNB_TRY(expect_tensor(call.outputs[0], call.problem.dtype, "y"));
    return dispatch_float(call.problem.dtype, [&](auto tag) -> Status {
      return launch_row_reduce<decltype(tag), R>(**device, call.inputs[0], call.outputs[0], red);
    });
  });
}

}  // namespace dnnb::cuda_kernels
