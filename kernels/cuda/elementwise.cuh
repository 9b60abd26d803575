// Elementwise kernels for N inputs (1: activations, 2: add/sub/mul/div and lerp with a scalar
// weight, 3: lerp with a weight tensor) and one output of the broadcast shape. Each op file
// supplies a functor `float op(float...)`; its math runs in f32 and rounds once.
//
// Two kernels, chosen per call:
//  - flat: every tensor contiguous with the output's shape and 16-byte aligned. The data is one
//    long array; each thread reads kUnroll 16-byte vectors per input, all loads issued before the
//    first use (32 bytes in flight per input per thread), then computes and stores. Bytes moved:
//    (N + 1) * numel * sizeof(T), the minimum; expected ~90% of copy bandwidth at large sizes.
//  - rows: anything else (broadcast inputs with stride 0, padded or transposed rows, odd
//    alignment). One warp per segment of 32 * kUnroll * kVec columns of one row; the row starts
//    of all tensors are computed once per warp (lane k computes tensor k's, then shuffles) so the
//    64-bit divisions of a multi-dim RowIndex are off the per-element path. Per tensor: 16-byte
//    loads when its rows allow it, else coalesced element loads (stride 1), an L1-cached re-read
//    (stride 0), or strided element loads (transposed: each lane touches its own sector; the
//    neighbouring rows that share those sectors run at the same time and hit L2).
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

// Wide rows kernel (the f32 binary default for broadcasts, padded or transposed inputs):
// segments of 32 * kRowsWideUnroll vectors per warp, every input's vectors loaded raw (unconverted: 4
// registers per vector) before any is used or any output stored, so each lane has
// kRowsWideUnroll 16-byte loads per input in flight (64 bytes, against one 16-byte load per
// input at a time in elementwise_rows_kernel, whose loads of its second vector cannot move above
// its first store: the output may alias an input as far as the compiler knows). A broadcast
// column (stride 0) is one load per vector, read into all lanes.
inline constexpr int kRowsWideUnroll = 4;

template <typename T, int N, typename Op>
__global__ void __launch_bounds__(kRowsWarps * 32, 3)  // <= 80 registers (64 spilled 124 B)
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
                                   a.cols);
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

// Broadcast path of the binary ops' default plan (add, sub, mul, div; the "flat2d" variant until
// 2026-11-21, promoted after the H200 measured it at 93-102% of copy for 16-bit): the output
// contiguous and viewed as [rows, cols] with cols % kVec == 0, each input either contiguous with
// the output's shape, a row broadcast (one contiguous [cols] row repeated: b = 1 x C) or a column
// broadcast (one value per row, the values contiguous: b = R x 1). One thread per 16-byte vector
// of the output, kFlatUnroll vectors per thread, every load issued before any store, as the flat
// kernel: a full input is its own 16-byte vector i, a row-broadcast input the 16-byte vector (i
// mod cols / kVec) of its row (16 KB at 8192 f16 columns: L1/L2-resident), a column-broadcast
// input one scalar at (i / (cols / kVec)). No row segments, no per-row pointer set-up, no
// conversion before the store, and for 16-bit 32 bytes per input per thread in flight where
// elementwise_rows_kernel has 16 (measured 2026-11-21: 16-bit b=16384x1 233 us, b=1x8192 201 us,
// 59-68% of copy, against 191 us for same-shape contiguous inputs). cols % kVec == 0 means a
// vector never crosses a row, so there is no tail; full and row inputs must be 16-byte aligned.
// Any other layout takes the rows kernels (try_launch_flat2d returns false).
enum Flat2dKind : int { kFlat2dFull = 0, kFlat2dRow = 1, kFlat2dColumn = 2 };

template <typename T>
struct Flat2dArgs {
  const T* in[2];
  int kind[2];    // Flat2dKind per input
  T* out;
  int64_t nvec;   // output vectors: rows * cols / kVec
  int64_t rvec;   // vectors per row: cols / kVec
  // i / rvec for i < 2^32 as a multiply and a shift (FastDivU32); magic 0: 64-bit division.
  uint32_t rvec_magic = 0;
  int rvec_shift = 0;
};

// Division by a fixed divisor d (1 <= d < 2^32) of any 32-bit n: q = (umulhi(n, m) + n) >> l
// with l = ceil(log2 d), m = floor(2^32 (2^l - d) / d) + 1 (Granlund and Montgomery 1994,
// "Division by invariant integers using multiplication"; the sum is taken in 64 bits so it
// cannot wrap). Why: the flat2d kernel needs row = i / (cols / kVec) per vector, and nvcc's
// 32-bit division by a run-time value is ~20 instructions (Nsight Compute on the H200,
// 2026-11-21: the bf16 broadcast div issued 23 instructions per element, 56% of issue slots).
struct FastDivU32 {
  uint32_t magic = 0;
  int shift = 0;
  static FastDivU32 of(uint32_t d) {
    FastDivU32 f;
    while ((uint64_t{1} << f.shift) < d) ++f.shift;
    f.magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - d)) / d + 1);
    return f;
  }
};

__device__ __forceinline__ uint32_t fast_div_u32(uint32_t n, uint32_t magic, int shift) {
  return static_cast<uint32_t>((static_cast<uint64_t>(__umulhi(n, magic)) + n) >> shift);
}

template <typename T, typename Op>
__global__ void __launch_bounds__(kFlatThreads) elementwise_flat2d_kernel(Flat2dArgs<T> a, Op op) {
  constexpr int W = kVec<T>;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * (kFlatThreads * kFlatUnroll) + threadIdx.x;
  Vec16<T> in[kFlatUnroll][2];
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const int64_t i = first + u * kFlatThreads;
    if (i < a.nvec) {
      int64_t row, vec_in_row;  // a multiply and a shift when the indices fit (the usual case)
      if (a.rvec_magic != 0) {
        const uint32_t q = fast_div_u32(static_cast<uint32_t>(i), a.rvec_magic, a.rvec_shift);
        row = q;
        const uint32_t rvec = static_cast<uint32_t>(a.rvec);
        vec_in_row = static_cast<int64_t>(static_cast<uint32_t>(i) - q * rvec);
      } else {
        row = i / a.rvec;
        vec_in_row = i - row * a.rvec;
      }
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        if (a.kind[k] == kFlat2dFull) {
          in[u][k] = reinterpret_cast<const Vec16<T>*>(a.in[k])[i];
        } else if (a.kind[k] == kFlat2dRow) {
          in[u][k] = reinterpret_cast<const Vec16<T>*>(a.in[k])[vec_in_row];
        } else {
          const T v = a.in[k][row];
#pragma unroll
          for (int e = 0; e < W; ++e) in[u][k].v[e] = v;
        }
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kFlatUnroll; ++u) {
    const int64_t i = first + u * kFlatThreads;
    if (i < a.nvec) {
      Vec16<T> out;
#pragma unroll
      for (int e = 0; e < W; ++e)
        out.v[e] = from_float<T>(op(element_float(in[u][0], e), element_float(in[u][1], e)));
      reinterpret_cast<Vec16<T>*>(a.out)[i] = out;
    }
  }
}

// The flat2d kind of input `t` (already broadcast to `out`'s shape), or -1 when the kernel
// cannot take it.
template <typename T>
int flat2d_kind(const Tensor& t) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const int nd = t.ndim();
  if (nd == 0) return -1;
  if (t.is_contiguous()) return aligned(data_ptr<T>(t)) ? kFlat2dFull : -1;
  const int last = nd - 1;
  if (t.strides[last] == 1 || t.shape[last] == 1) {  // row broadcast: outer dims all repeated
    for (int d = 0; d < last; ++d)
      if (t.shape[d] > 1 && t.strides[d] != 0) return -1;
    return aligned(data_ptr<T>(t)) ? kFlat2dRow : -1;
  }
  if (t.strides[last] != 0) return -1;
  int64_t expect = 1;  // column broadcast: outer dims contiguous, one value per row
  for (int d = last - 1; d >= 0; --d) {
    if (t.shape[d] > 1 && t.strides[d] != expect) return -1;
    expect *= t.shape[d];
  }
  return kFlat2dColumn;
}

// Launches elementwise_flat2d_kernel when its preconditions hold; false (nothing launched)
// otherwise.
template <typename T, typename Op>
Result<bool> try_launch_flat2d(const CudaDevice& device, const std::array<Tensor, 2>& in,
                               const Tensor& out, const Op& op) {
  constexpr int W = kVec<T>;
  if (out.ndim() == 0 || !out.is_contiguous() ||
      reinterpret_cast<uintptr_t>(data_ptr<T>(out)) % 16 != 0)
    return false;
  const int64_t cols = out.shape[out.ndim() - 1];
  if (cols <= 0 || cols % W != 0) return false;
  Flat2dArgs<T> args;
  for (int k = 0; k < 2; ++k) {
    const int kind = flat2d_kind<T>(in[k]);
    if (kind < 0) return false;
    args.kind[k] = kind;
    args.in[k] = data_ptr<T>(in[k]);
  }
  args.out = data_ptr<T>(out);
  args.nvec = out.numel() / W;
  args.rvec = cols / W;
  if (args.nvec <= static_cast<int64_t>(UINT32_MAX) && args.rvec <= static_cast<int64_t>(UINT32_MAX)) {
    const FastDivU32 f = FastDivU32::of(static_cast<uint32_t>(args.rvec));
    args.rvec_magic = f.magic;
    args.rvec_shift = f.shift;
  }
  const int64_t blocks = ceil_div(args.nvec, kFlatThreads * kFlatUnroll);
  if (blocks > INT32_MAX) return false;
  elementwise_flat2d_kernel<T, Op>
      <<<static_cast<unsigned>(blocks), kFlatThreads, 0, device.stream()>>>(args, op);
  DNNB_CUDA_CHECK_LAUNCH();
  return true;
}

// Where the flat kernel does not apply (broadcasts, padded or transposed tensors):
enum class ElementwisePlan {
  rows,    // elementwise_rows_kernel (unary ops, lerp; binary variant "rows", the binary
           // default before 2026-11-21)
  wide,    // f32 elementwise_rows_wide_kernel (measured 2026-11-21: 263-285 us against 276-290
           // for broadcasts), f16/bf16 elementwise_rows_kernel ("wide" measured slower for
           // 16-bit, e.g. div 257 us against 220): the binary default until 2026-11-21 (session 3)
  binary,  // binary default: elementwise_flat2d_kernel when its layout allows, else as wide
           // (measured 2026-11-21 as the "flat2d" variant: 16-bit row/column broadcasts 134-174
           // us against 199-233, f32 258-262 against 265-288 at 16384 x 8192)
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
      auto launched = try_launch_flat2d<T, Op>(device, in, out, op);
      if (!launched) return launched.status();
      if (*launched) return Status::ok();
    }
  }
  const bool wide = plan != ElementwisePlan::rows && sizeof(T) == 4;
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
  return register_cuda(op_name, "", {DType::f32, DType::f16, DType::bf16},
                       [op](OpCall& call) { return run_elementwise<1>(call, {"x"}, op); });
}

// One binary op y = op(a, b) with numpy broadcasting of both inputs to y's shape, placed by
// `plan` where the flat kernel does not apply (ElementwisePlan::binary for the "" variant).
template <typename Op>
bool register_binary(const char* op_name, Op op, const char* variant = "",
                     ElementwisePlan plan = ElementwisePlan::binary) {
  return register_cuda(op_name, variant, {DType::f32, DType::f16, DType::bf16},
                       [op, plan](OpCall& call) {
                         return run_elementwise<2>(call, {"a", "b"}, op, plan);
                       });
}

}  // namespace dnnb::cuda_kernels
