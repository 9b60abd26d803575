// Elementwise kernels for N inputs (1: activations, 2: add/sub/mul/div and lerp with a scalar
// weight, 3: lerp with a weight tensor) and one output of the broadcast shape. Each op file
// supplies a functor `float op(float...)`; its math runs in f32 and rounds once.
//
// The kernels, chosen per call (launch_elementwise):
//  - flat: every tensor contiguous with the output's shape and 16-byte aligned. The data is one
//    long array; each thread reads kFlatUnroll 16-byte vectors per input, all loads issued before
//    the first use (32 bytes in flight per input per thread), then computes and stores. Bytes
//    moved: (N + 1) * numel * sizeof(T), the minimum.
//  - tile (binary ops only): row (1 x C) and column (R x 1) broadcasts of contiguous tensors,
//    each thread kTileRows rows of one 16-byte column vector (elementwise_tile_kernel).
//  - rows: anything else (broadcast inputs with stride 0, padded or transposed rows, odd
//    alignment). One warp per segment of 32 * kRowsUnroll * kVec columns of one row; the row
//    starts of all tensors are computed once per warp (lane k computes tensor k's, then
//    shuffles) so the 64-bit divisions of a multi-dim RowIndex are off the per-element path. Per
//    tensor: 16-byte loads when its rows allow it, else coalesced element loads (stride 1), an
//    L1-cached re-read (stride 0), or strided element loads (transposed: each lane touches its
//    own sector; the neighbouring rows that share those sectors run at the same time and hit L2).
//    f32 binary ops take its wide form (elementwise_rows_wide_kernel: more loads in flight).
#pragma once
#include <algorithm>
#include <array>
#include <string>

#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

inline constexpr int kFlatThreads = 256;
inline constexpr int kFlatUnroll = 2;
inline constexpr int kRowsWarps = 8;   // warps per block in the rows kernel
inline constexpr int kRowsUnroll = 2;  // 16-byte vectors per lane per segment

template <typename T, int N>
struct FlatArgs {
  const T* in[N];
  T* out;
  int64_t n;
};

template <typename T, int N>
struct RowsArgs {
  RowView<T> in[N];
  RowView<T> out;
  int64_t rows;
  int64_t cols;
  int64_t segs_per_row;
};

template <int N, typename Op>
__device__ __forceinline__ float apply_op(const Op& op, const float (&x)[N]) {
  if constexpr (N == 1) {
    return op(x[0]);
  } else if constexpr (N == 2) {
    return op(x[0], x[1]);
  } else {
    return op(x[0], x[1], x[2]);
  }
}

// Contiguous, aligned tensors: kUnroll vectors per thread, scalar tail in the last block.
template <typename T, int N, typename Op>
__global__ void __launch_bounds__(kFlatThreads) elementwise_flat_kernel(FlatArgs<T, N> a, Op op) {
  constexpr int W = kVec<T>;
  const int64_t nvec = a.n / W;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * (kFlatThreads * kFlatUnroll) + threadIdx.x;
  Vec16<T> in[kFlatUnroll][N];
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const int64_t i = first + u * kFlatThreads;
    if (i < nvec) {
#pragma unroll
      for (int k = 0; k < N; ++k) in[u][k] = reinterpret_cast<const Vec16<T>*>(a.in[k])[i];
    }
  }
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const int64_t i = first + u * kFlatThreads;
    if (i < nvec) {
      Vec16<T> out;
#pragma unroll
      for (int e = 0; e < W; ++e) {
        float x[N];
#pragma unroll
        for (int k = 0; k < N; ++k) x[k] = element_float(in[u][k], e);
        out.v[e] = from_float<T>(apply_op<N>(op, x));
      }
      reinterpret_cast<Vec16<T>*>(a.out)[i] = out;
    }
  }
  if (blockIdx.x == gridDim.x - 1) {  // the n % W elements after the last whole vector
    const int64_t i = nvec * W + threadIdx.x;
    if (i < a.n) {
      float x[N];
#pragma unroll
      for (int k = 0; k < N; ++k) x[k] = to_float(a.in[k][i]);
      a.out[i] = from_float<T>(apply_op<N>(op, x));
    }
  }
}

// Start of `row` in every input and the output: lane k computes tensor k's row offset
// (RowIndex division loop) and the warp shares them, so the division runs once per tensor.
template <typename T, int N>
struct RowPointers {
  const T* in[N];
  T* out;
};

template <typename T, int N>
__device__ __forceinline__ RowPointers<T, N> row_pointers(const RowsArgs<T, N>& a, int64_t row, int lane) {
  int64_t my_start = 0;
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (lane == k) my_start = row_start(a.in[k].ri, row);
  if (lane == N) my_start = row_start(a.out.ri, row);
  RowPointers<T, N> p;
#pragma unroll
  for (int k = 0; k < N; ++k) p.in[k] = a.in[k].data + __shfl_sync(0xffffffffu, my_start, k);
  p.out = a.out.data + __shfl_sync(0xffffffffu, my_start, N);
  return p;
}

// Any layout: one warp per row segment (see the file comment).
template <typename T, int N, typename Op>
__global__ void __launch_bounds__(kRowsWarps * 32)
    elementwise_rows_kernel(RowsArgs<T, N> a, Op op) {
  constexpr int W = kVec<T>;
  constexpr int64_t kSegCols = 32 * W * kRowsUnroll;
  const int lane = threadIdx.x & 31;
  const int64_t seg = static_cast<int64_t>(blockIdx.x) * kRowsWarps + (threadIdx.x >> 5);
  if (seg >= a.rows * a.segs_per_row) return;
  const int64_t row = seg / a.segs_per_row;
  const int64_t seg_col = (seg % a.segs_per_row) * kSegCols;

  const RowPointers<T, N> ptr = row_pointers(a, row, lane);
  const T* const* in_row = ptr.in;
  T* out_row = ptr.out;

#pragma unroll
  for (int j = 0; j < kRowsUnroll; ++j) {
    const int64_t c = seg_col + (j * 32 + lane) * W;
    if (c < a.cols) {
      float x[N][W];
#pragma unroll
      for (int k = 0; k < N; ++k) load_vec<T>(x[k], a.in[k], in_row[k], c, a.cols, 0.f);
      float y[W];
#pragma unroll
      for (int e = 0; e < W; ++e) {
        float args[N];
#pragma unroll
        for (int k = 0; k < N; ++k) args[k] = x[k][e];
        y[e] = apply_op<N>(op, args);
      }
      store_vec<T>(out_row, a.out, c, a.cols, y);
    }
  }
}

// Wide rows kernel (f32 binary ops on layouts the tile kernel does not take: broadcasts over
// several dims, padded or transposed inputs): segments of 32 * kRowsWideUnroll vectors per warp,
// every input's vectors loaded raw (unconverted: 4 registers per vector) before any is used or
// any output stored, so each lane has kRowsWideUnroll 16-byte loads per input in flight (64
// bytes, against one 16-byte load per input at a time in elementwise_rows_kernel, whose loads of
// its second vector cannot move above its first store: the output may alias an input as far as
// the compiler knows). A broadcast column (stride 0) is one load per vector, read into all lanes.
// 16-bit types keep elementwise_rows_kernel, which measured faster for them.
inline constexpr int kRowsWideUnroll = 4;

template <typename T, int N, typename Op>
__global__ void __launch_bounds__(kRowsWarps * 32, 3)  // <= 80 registers (at 64 it spills)
    elementwise_rows_wide_kernel(RowsArgs<T, N> a, Op op) {
  constexpr int W = kVec<T>;
  constexpr int U = kRowsWideUnroll;
  constexpr int64_t kSegCols = 32 * W * U;
  const int lane = threadIdx.x & 31;
  const int64_t seg = static_cast<int64_t>(blockIdx.x) * kRowsWarps + (threadIdx.x >> 5);
  if (seg >= a.rows * a.segs_per_row) return;
  const int64_t row = seg / a.segs_per_row;
  const int64_t seg_col = (seg % a.segs_per_row) * kSegCols;

  const RowPointers<T, N> ptr = row_pointers(a, row, lane);
  const T* const* in_row = ptr.in;
  T* out_row = ptr.out;

  Vec16<T> raw[U][N];
#pragma unroll
  for (int j = 0; j < U; ++j) {
    const int64_t c = seg_col + (j * 32 + lane) * W;
    if (c < a.cols) {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        if (a.in[k].ri.col_stride == 0) {  // broadcast column: one value for the vector
          const T v = in_row[k][0];
#pragma unroll
          for (int e = 0; e < W; ++e) raw[j][k].v[e] = v;
        } else {
          load_raw_vec<T, int64_t>(raw[j][k], in_row[k], a.in[k].ri.col_stride, a.in[k].vec, c,
                                   a.cols, 0.f);
        }
      }
    }
  }
#pragma unroll
  for (int j = 0; j < U; ++j) {
    const int64_t c = seg_col + (j * 32 + lane) * W;
    if (c < a.cols) {
      float y[W];
#pragma unroll
      for (int e = 0; e < W; ++e) {
        float args[N];
#pragma unroll
        for (int k = 0; k < N; ++k) args[k] = element_float(raw[j][k], e);
        y[e] = apply_op<N>(op, args);
      }
      store_vec<T>(out_row, a.out, c, a.cols, y);
    }
  }
}

// Broadcast path of the binary ops (add, sub, mul, div): the output contiguous and viewed as
// [rows, cols] with cols % kVec == 0, each input either a full tensor (contiguous with the
// output's shape), a row broadcast (one contiguous [cols] row repeated: b = 1 x C) or a column
// broadcast (one value per row, the values contiguous: b = R x 1); full and row inputs 16-byte
// aligned. Each operand's kind is a template argument, and each thread takes kTileRows rows of one
// 16-byte column vector: it issues all of its tile's loads (a row-broadcast vector once, a
// column-broadcast value once per row) with no branch, then computes and stores. A warp covers 32
// consecutive vectors of each of its rows: every load and store is coalesced. With the kinds
// tested at run time around every load, one vector per thread, the 16-bit broadcast div (its
// IEEE division is ~10 instructions) could not keep enough loads in flight; in this layout it
// runs at mul's speed. cols % kVec == 0 means a vector never crosses a row, so there is no column
// tail; the last rows (rows % kTileRows) go one at a time. Any other layout takes the rows
// kernels (try_launch_tile returns false).
enum TileKind : int { kTileFull = 0, kTileRow = 1, kTileColumn = 2 };
inline constexpr int kTileRows = 4;
inline constexpr int kTileThreads = 256;

template <typename T>
struct TileArgs {
  const T* in[2];
  T* out;
  int64_t rows;
  int64_t rvec;  // 16-byte vectors per row: cols / kVec
};

template <int Kind, typename T>
__device__ __forceinline__ Vec16<T> tile_load(const T* p, int64_t row, int64_t rvec, int64_t v) {
  if constexpr (Kind == kTileFull) {
    return reinterpret_cast<const Vec16<T>*>(p)[row * rvec + v];
  } else if constexpr (Kind == kTileRow) {
    return reinterpret_cast<const Vec16<T>*>(p)[v];
  } else {
    Vec16<T> r;
    const T s = p[row];
#pragma unroll
    for (int e = 0; e < kVec<T>; ++e) r.v[e] = s;
    return r;
  }
}

// Rows [r0, r0 + R) of column vector v: every load first (the output may alias an input as far
// as the compiler knows, so it would not move a load above a store), then the stores.
template <typename T, int KA, int KB, int R, typename Op>
__device__ __forceinline__ void tile_rows(const TileArgs<T>& a, const Op& op, int64_t r0, int64_t v) {
  Vec16<T> x[R][2];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    x[j][0] = tile_load<KA>(a.in[0], r0 + j, a.rvec, v);
    x[j][1] = tile_load<KB>(a.in[1], r0 + j, a.rvec, v);
  }
#pragma unroll
  for (int j = 0; j < R; ++j) {
    Vec16<T> out;
#pragma unroll
    for (int e = 0; e < kVec<T>; ++e)
      out.v[e] = from_float<T>(op(element_float(x[j][0], e), element_float(x[j][1], e)));
    reinterpret_cast<Vec16<T>*>(a.out)[(r0 + j) * a.rvec + v] = out;
  }
}

template <typename T, int KA, int KB, typename Op>
__global__ void __launch_bounds__(kTileThreads) elementwise_tile_kernel(TileArgs<T> a, Op op) {
  const int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= a.rvec) return;
  const int64_t step = static_cast<int64_t>(gridDim.y) * blockDim.y * kTileRows;
  for (int64_t r0 = (static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y) * kTileRows;
       r0 < a.rows; r0 += step) {
    if (r0 + kTileRows <= a.rows) {
      tile_rows<T, KA, KB, kTileRows>(a, op, r0, v);
    } else {
      for (int64_t r = r0; r < a.rows; ++r) tile_rows<T, KA, KB, 1>(a, op, r, v);
    }
  }
}

// The tile kind of input `t` (already broadcast to `out`'s shape), or -1 when the kernel cannot
// take it.
template <typename T>
int tile_kind(const Tensor& t) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const int nd = t.ndim();
  if (nd == 0) return -1;
  if (t.is_contiguous()) return aligned(data_ptr<T>(t)) ? kTileFull : -1;
  const int last = nd - 1;
  if (t.strides[last] == 1 || t.shape[last] == 1) {  // row broadcast: outer dims all repeated
    for (int d = 0; d < last; ++d)
      if (t.shape[d] > 1 && t.strides[d] != 0) return -1;
    return aligned(data_ptr<T>(t)) ? kTileRow : -1;
  }
  if (t.strides[last] != 0) return -1;
  int64_t expect = 1;  // column broadcast: outer dims contiguous, one value per row
  for (int d = last - 1; d >= 0; --d) {
    if (t.shape[d] > 1 && t.strides[d] != expect) return -1;
    expect *= t.shape[d];
  }
  return kTileColumn;
}

// The kernel for the kinds (ka, kb) as template arguments. Two full inputs never get here: that
// is the flat kernel's case.
template <typename T, int KA, typename Op>
void launch_tile_b(int kb, dim3 grid, dim3 block, cudaStream_t s, const TileArgs<T>& args, const Op& op) {
  if (kb == kTileFull) {
    if constexpr (KA != kTileFull) elementwise_tile_kernel<T, KA, kTileFull, Op><<<grid, block, 0, s>>>(args, op);
  } else if (kb == kTileRow) {
    elementwise_tile_kernel<T, KA, kTileRow, Op><<<grid, block, 0, s>>>(args, op);
  } else {
    elementwise_tile_kernel<T, KA, kTileColumn, Op><<<grid, block, 0, s>>>(args, op);
  }
}

// Launches elementwise_tile_kernel when its preconditions hold; false (nothing launched)
// otherwise.
template <typename T, typename Op>
Result<bool> try_launch_tile(const CudaDevice& device, const std::array<Tensor, 2>& in,
                             const Tensor& out, const Op& op) {
  constexpr int W = kVec<T>;
  if (out.ndim() == 0 || !out.is_contiguous() ||
      reinterpret_cast<uintptr_t>(data_ptr<T>(out)) % 16 != 0)
    return false;
  const int64_t cols = out.shape[out.ndim() - 1];
  if (cols <= 0 || cols % W != 0) return false;
  const int ka = tile_kind<T>(in[0]), kb = tile_kind<T>(in[1]);
  if (ka < 0 || kb < 0 || (ka == kTileFull && kb == kTileFull)) return false;
  const TileArgs<T> args{{data_ptr<T>(in[0]), data_ptr<T>(in[1])}, data_ptr<T>(out),
                         out.numel() / cols, cols / W};
  // Threads along the row's vectors (a warp's worth at least), the rest of the block on rows.
  const int bx = static_cast<int>(std::min<int64_t>(kTileThreads, ceil_div(args.rvec, 32) * 32));
  const int by = kTileThreads / bx;
  const int64_t gx = ceil_div(args.rvec, bx);
  if (gx > INT32_MAX) return false;
  const int64_t gy = std::min<int64_t>(65535, ceil_div(args.rows, int64_t{by} * kTileRows));
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  const dim3 block(static_cast<unsigned>(bx), static_cast<unsigned>(by));
  if (ka == kTileFull) {
    launch_tile_b<T, kTileFull>(kb, grid, block, device.stream(), args, op);
  } else if (ka == kTileRow) {
    launch_tile_b<T, kTileRow>(kb, grid, block, device.stream(), args, op);
  } else {
    launch_tile_b<T, kTileColumn>(kb, grid, block, device.stream(), args, op);
  }
  DNNB_CUDA_CHECK_LAUNCH();
  return true;
}

// Where the flat kernel does not apply (broadcasts, padded or transposed tensors):
enum class ElementwisePlan {
  rows,    // elementwise_rows_kernel (unary ops, lerp)
  binary,  // add, sub, mul, div: elementwise_tile_kernel when its layout allows, else f32
           // elementwise_rows_wide_kernel and f16/bf16 elementwise_rows_kernel
};
// Launches the op on tensors that already have the output's shape (broadcast views allowed).
// `plan`: which kernel takes what the flat kernel does not (same flat kernel for every plan).
template <typename T, int N, typename Op>
Status launch_elementwise(const CudaDevice& device, const std::array<Tensor, N>& in,
                          const Tensor& out, const Op& op,
                          ElementwisePlan plan = ElementwisePlan::rows) {
  const int64_t n = out.numel();
  if (n == 0) return Status::ok();
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  bool flat = out.is_contiguous() && aligned(data_ptr<T>(out));
  for (const Tensor& t : in) flat = flat && t.is_contiguous() && aligned(data_ptr<T>(t));
  if (flat) {
    FlatArgs<T, N> args;
    for (int k = 0; k < N; ++k) args.in[k] = data_ptr<T>(in[k]);
    args.out = data_ptr<T>(out);
    args.n = n;
    const int64_t blocks = std::max<int64_t>(1, ceil_div(n / kVec<T>, kFlatThreads * kFlatUnroll));
    if (blocks > INT32_MAX) return Status::unsupported("tensor too large for one launch");
    elementwise_flat_kernel<T, N, Op>
        <<<static_cast<unsigned>(blocks), kFlatThreads, 0, device.stream()>>>(args, op);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  if constexpr (N == 2) {
    if (plan == ElementwisePlan::binary) {
      auto launched = try_launch_tile<T, Op>(device, in, out, op);
      if (!launched) return launched.status();
      if (*launched) return Status::ok();
    }
  }
  const bool wide = plan == ElementwisePlan::binary && sizeof(T) == 4;
  RowsArgs<T, N> args;
  for (int k = 0; k < N; ++k) {
    auto view = make_row_view<T>(in[k]);
    if (!view) return view.status();
    args.in[k] = *view;
  }
  auto out_view = make_row_view<T>(out);
  if (!out_view) return out_view.status();
  args.out = *out_view;
  args.rows = args.out.ri.rows;
  args.cols = args.out.ri.cols;
  if (wide) {
    args.segs_per_row = ceil_div(args.cols, 32 * kVec<T> * kRowsWideUnroll);
    const int64_t blocks = ceil_div(args.rows * args.segs_per_row, kRowsWarps);
    if (blocks > INT32_MAX) return Status::unsupported("tensor too large for one launch");
    elementwise_rows_wide_kernel<T, N, Op>
        <<<static_cast<unsigned>(blocks), kRowsWarps * 32, 0, device.stream()>>>(args, op);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  args.segs_per_row = ceil_div(args.cols, 32 * kVec<T> * kRowsUnroll);
  const int64_t blocks = ceil_div(args.rows * args.segs_per_row, kRowsWarps);
  if (blocks > INT32_MAX) return Status::unsupported("tensor too large for one launch");
  elementwise_rows_kernel<T, N, Op>
      <<<static_cast<unsigned>(blocks), kRowsWarps * 32, 0, device.stream()>>>(args, op);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// Checks the call's tensors, broadcasts the inputs to the output's shape and launches `op` for
// the problem's dtype. `names` are the inputs' names for error messages.
template <int N, typename Op>
Status run_elementwise(OpCall& call, const std::array<const char*, N>& names, const Op& op,
                       ElementwisePlan plan = ElementwisePlan::rows) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != N || call.outputs.size() != 1)
    return Status::bad_input("cuda " + call.problem.op + ": expected " + std::to_string(N) +
                             " inputs and 1 output");
  const Tensor& out = call.outputs[0];
  DNNB_TRY(expect_tensor(out, call.problem.dtype, "y"));
  std::array<Tensor, N> in;
  for (int k = 0; k < N; ++k) {
    DNNB_TRY(expect_tensor(call.inputs[k], call.problem.dtype, names[k]));
    auto b = call.inputs[k].broadcast_to(out.shape);
    if (!b) return b.status();
    in[k] = *b;
  }
  return dispatch_float(call.problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    return launch_elementwise<T, N, Op>(**device, in, out, op, plan);
  });
}

// One activation y = op(x), registered for f32, f16 and bf16.
template <typename Op>
bool register_unary(const char* op_name, Op op) {
  return register_cuda(op_name, "", "", {DType::f32, DType::f16, DType::bf16},
                       [op](OpCall& call) { return run_elementwise<1>(call, {"x"}, op); });
}

// One binary op y = op(a, b) with numpy broadcasting of both inputs to y's shape
// (ElementwisePlan::binary), registered for f32, f16 and bf16.
template <typename Op>
bool register_binary(const char* op_name, Op op) {
  return register_cuda(op_name, "", "", {DType::f32, DType::f16, DType::bf16}, [op](OpCall& call) {
    return run_elementwise<2>(call, {"a", "b"}, op, ElementwisePlan::binary);
  });
}

}  // namespace dnnb::cuda_kernels
