// Row normalisation, shared by layernorm (kLayerNorm = true) and rmsnorm:
//   layernorm: y = (x - mean) / sqrt(var + eps) * w + b      (biased variance)
//   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * (w + w_offset) (w_offset 0: torch, 1: gemma)
// all in f32, rounded once.
//
// The statistics (shifted data, corrected two-pass variance) and the output expression every
// kernel shares: norm_common.cuh.
//
// Kernels (launch_norm_rows picks the first that takes the row):
//  - pipe (f16/bf16 rows of 1025..8192 columns, aligned): norm_pipe_kernel, persistent blocks
//    that prefetch the next rows into shared memory with cp.async (row_pipe.cuh).
//  - packed (1025..8192 columns): norm_packed_kernel, the row as raw dtype vectors in registers,
//    3 (f32) or 4 (16-bit) rows per SM.
//  - registers (cols <= 16384): norm_regs_kernel, the row read once into registers as f32 (EPT =
//    8 or 32 floats per thread, 16-byte loads; launch shape register_rows_launch, cuda_common.cuh).
//  - long (cols > 16384): norm_long_kernel, one block of up to 512 threads per row streams x
//    once, keeping it in shared memory (up to 51200 columns); longer rows read x from global
//    memory again in each later pass (mostly L2 hits).
// w and b are read with 16-byte loads at write time (they stay in L2/L1: every row reads the same
// N values), except in the pipe kernel (norm_pipe.cuh). Bytes: x read once, y written once, w/b
// once from DRAM: the minimum (the long kernel's rows beyond the shared-memory cache aside).
#pragma once
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/norm_common.cuh"
#include "kernels/cuda/norm_pipe.cuh"

namespace dnnb::cuda_kernels {

template <typename T, int EPT, bool kLayerNorm>
__global__ void __launch_bounds__(kRegisterRowsMaxThreads<EPT>, 1) norm_regs_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int VPT = EPT / W;
  __shared__ float scratch[3][32];
  const int group = a.group;
  const int t = threadIdx.x % group;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= a.rows) return;  // whole spare warps of the last block (warp-per-row only)
  const T* x_row = a.x.row(row);
  const int cols = static_cast<int>(a.cols);  // <= kMaxRegisterCols: 32-bit column math
  const float shift = row_shift<T, kLayerNorm>(x_row);

  // Padding reads the shift: it adds 0 to the shifted sum (and 0 to rmsnorm's, shift 0).
  float v[VPT][W];
#pragma unroll
  for (int j = 0; j < VPT; ++j)
    load_vec<T, int>(v[j], a.x, x_row, (j * group + t) * W, cols, shift);

  const float inv_cols = 1.f / static_cast<float>(cols);
  float mean = 0.f;
  if constexpr (kLayerNorm) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < W; ++k) s += v[j][k] - shift;
    mean = shift + group_reduce(s, SumOp{}, 0.f, group, scratch[0]) * inv_cols;
  }
  float q = 0.f;
  float dsum = 0.f;  // layernorm
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float d = (j * group + t) * W + k < cols ? v[j][k] - mean : 0.f;
      q += d * d;
      if constexpr (kLayerNorm) dsum += d;
    }
  if constexpr (kLayerNorm)
    group_sum2(q, dsum, group, scratch[1], scratch[2]);
  else
    q = group_reduce(q, SumOp{}, 0.f, group, scratch[1]);
  const NormStats st = norm_stats<kLayerNorm>(mean, q, dsum, inv_cols, a.eps);

  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int c = (j * group + t) * W;
    if (c < cols) store_normalized<T, kLayerNorm, int>(y_row, a, c, cols, v[j], st);
  }
}

// Streaming kernel: 16 elements per thread per iteration (4 or 2 16-byte loads in flight), about
// cols / 64 threads per row (32 to 512): short rows share an SM, long ones keep enough loads in
// flight.
template <typename T>
inline constexpr int kNormLongUnroll = 16 / kVec<T>;
inline constexpr int kNormLongThreads = 512;
inline constexpr int64_t kNormCacheBytes = 200 * 1024;  // of the H100/H200's 227 KB per block

// One block per row. Pass 1 streams x from global memory (shifted sum for layernorm, sum of
// squares for rmsnorm), keeping it in shared memory as floats when cache_x; later passes
// (layernorm's deviation sums, then the write) read the cache, or x again from global memory.
template <typename T, bool kLayerNorm>
__global__ void __launch_bounds__(kNormLongThreads, 1) norm_long_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int U = kNormLongUnroll<T>;
  extern __shared__ float4 cached_x4[];
  float* cached = reinterpret_cast<float*>(cached_x4);
  __shared__ float scratch[3][32];
  const int64_t row = blockIdx.x;
  const int n = blockDim.x;
  const int64_t step = static_cast<int64_t>(n) * W;
  const int64_t first = static_cast<int64_t>(threadIdx.x) * W;
  const T* x_row = a.x.row(row);
  const float inv_cols = 1.f / static_cast<float>(a.cols);
  const float shift = row_shift<T, kLayerNorm>(x_row);
  // Columns [c, c + W) of the row: from the cache (written by this same thread in pass 1) or
  // from global memory; columns past the end read `pad`.
  const auto read = [&](float(&v)[W], int64_t c, float pad) {
    if (a.cache_x) {
      if (c < a.cols) {  // the cache holds round_up(cols, W) floats: never read past it
#pragma unroll
        for (int k = 0; k < W; k += 4) {
          const float4 q = *reinterpret_cast<const float4*>(cached + c + k);
          v[k] = q.x;
          v[k + 1] = q.y;
          v[k + 2] = q.z;
          v[k + 3] = q.w;
        }
      }
#pragma unroll
      for (int k = 0; k < W; ++k)
        if (c + k >= a.cols) v[k] = pad;
    } else {
      load_vec<T, int64_t>(v, a.x, x_row, c, a.cols, pad);
    }
  };

  float acc = 0.f;  // layernorm: sum (x - shift); rmsnorm: sum x^2
  for (int64_t c = first; c < a.cols; c += step * U) {
    float v[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u)  // padding reads the shift: adds 0
      load_vec<T, int64_t>(v[u], a.x, x_row, c + u * step, a.cols, shift);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (a.cache_x && c + u * step < a.cols) {
#pragma unroll
        for (int k = 0; k < W; k += 4)
          *reinterpret_cast<float4*>(cached + c + u * step + k) =
              make_float4(v[u][k], v[u][k + 1], v[u][k + 2], v[u][k + 3]);
      }
#pragma unroll
      for (int k = 0; k < W; ++k) acc += kLayerNorm ? v[u][k] - shift : v[u][k] * v[u][k];
    }
  }
  acc = group_reduce(acc, SumOp{}, 0.f, n, scratch[0]);
  float mean = 0.f;
  float q = acc;
  float dsum = 0.f;
  if constexpr (kLayerNorm) {
    mean = shift + acc * inv_cols;
    q = 0.f;
    for (int64_t c = first; c < a.cols; c += step * U) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) read(v[u], c + u * step, mean);  // padding reads mean: adds 0
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float d = v[u][k] - mean;
          q += d * d;
          dsum += d;
        }
    }
    group_sum2(q, dsum, n, scratch[1], scratch[2]);
  }
  const NormStats st = norm_stats<kLayerNorm>(mean, q, dsum, inv_cols, a.eps);

  T* y_row = a.y.row(row);
  for (int64_t c = first; c < a.cols; c += step) {
    float v[W];
    read(v, c, 0.f);
    store_normalized<T, kLayerNorm, int64_t>(y_row, a, c, a.cols, v, st);
  }
}

// Rows of 1025..8192 columns the pipe kernel does not take (f32, unaligned 16-bit rows): the
// register kernel with the row kept as raw dtype vectors (16 registers per thread for 16-bit, 32
// for f32, at 32 elements per thread), converted to f32 in each pass (exact, so the results equal
// norm_regs_kernel's bit for bit: same per-thread order, same reductions). The launch bound asks
// for kNormPackedMinBlocks rows per SM, against 2 (f32) / 3 (16-bit) for norm_regs_kernel: 64 KB
// (16-bit) / 96 KB (f32) of rows per SM, so one row's loads overlap other rows' reductions and
// writes (f32 layernorm: 1.2x faster than the f32 copies of norm_regs_kernel, at the copy rate).
inline constexpr int kNormPackedThreads = 256;  // 8192 columns at 32 per thread
inline constexpr int64_t kNormPackedMaxCols = kNormPackedThreads * 32;
template <typename T>
inline constexpr int kNormPackedMinBlocks = sizeof(T) == 4 ? 3 : 4;  // <= 80 / 64 registers

template <typename T, bool kLayerNorm>
__global__ void __launch_bounds__(kNormPackedThreads, kNormPackedMinBlocks<T>)
    norm_packed_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int VPT = 32 / W;
  __shared__ float scratch[3][32];
  const int t = threadIdx.x;  // one block per row: group == blockDim.x
  const int group = blockDim.x;
  const int64_t row = blockIdx.x;
  const T* x_row = a.x.row(row);
  const int cols = static_cast<int>(a.cols);
  const float shift = row_shift<T, kLayerNorm>(x_row);

  // Padding reads the shift (an element of the row, so exact in T): it adds 0 to the sums.
  Vec16<T> raw[VPT];
#pragma unroll
  for (int j = 0; j < VPT; ++j)
    load_raw_vec<T, int>(raw[j], x_row, a.x.ri.col_stride, a.x.vec, (j * group + t) * W, cols,
                         shift);

  const float inv_cols = 1.f / static_cast<float>(cols);
  float mean = 0.f;
  if constexpr (kLayerNorm) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < W; ++k) s += element_float(raw[j], k) - shift;
    mean = shift + group_reduce(s, SumOp{}, 0.f, group, scratch[0]) * inv_cols;
  }
  float q = 0.f;
  float dsum = 0.f;  // layernorm
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float d = (j * group + t) * W + k < cols ? element_float(raw[j], k) - mean : 0.f;
      q += d * d;
      if constexpr (kLayerNorm) dsum += d;
    }
  if constexpr (kLayerNorm)
    group_sum2(q, dsum, group, scratch[1], scratch[2]);
  else
    q = group_reduce(q, SumOp{}, 0.f, group, scratch[1]);
  const NormStats st = norm_stats<kLayerNorm>(mean, q, dsum, inv_cols, a.eps);

  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int c = (j * group + t) * W;
    if (c < cols) {
      float v[W];
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] = element_float(raw[j], k);
      store_normalized<T, kLayerNorm, int>(y_row, a, c, cols, v, st);
    }
  }
}

template <typename T, bool kLayerNorm>
Status launch_norm_rows(const CudaDevice& device, NormArgs<T> a) {
  if (a.rows == 0 || a.cols == 0) return Status::ok();
  auto launched = try_launch_norm_pipe<T, kLayerNorm>(device, a);
  if (!launched) return launched.status();
  if (*launched) return Status::ok();
  if (a.rows > INT32_MAX) return Status::unsupported("too many rows for one launch");
  if (a.cols > 32 * 32 && a.cols <= kNormPackedMaxCols) {
    const int block = static_cast<int>(round_up(ceil_div(a.cols, 32), 32));
    a.group = block;
    norm_packed_kernel<T, kLayerNorm>
        <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  if (a.cols <= kMaxRegisterCols) {
    const RegisterRowsLaunch l = register_rows_launch(a.rows, a.cols, device.sm_count());
    a.group = l.group;
    if (l.ept == 8)
      norm_regs_kernel<T, 8, kLayerNorm>
          <<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    else
      norm_regs_kernel<T, 32, kLayerNorm>
          <<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  const int64_t cache_bytes = round_up(a.cols, kVec<T>) * static_cast<int64_t>(sizeof(float));
  a.cache_x = cache_bytes <= kNormCacheBytes;
  const int smem = a.cache_x ? static_cast<int>(cache_bytes) : 0;
  if (smem > 48 * 1024)  // beyond the default limit a kernel must opt in
    DNNB_CUDA_TRY(cudaFuncSetAttribute(norm_long_kernel<T, kLayerNorm>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // About four iterations of the streaming loop per thread.
  const int block = static_cast<int>(
      std::clamp<int64_t>(round_up(ceil_div(a.cols, 16 * 4), 32), 32, kNormLongThreads));
  norm_long_kernel<T, kLayerNorm>
      <<<static_cast<unsigned>(a.rows), block, smem, device.stream()>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// Checks the call's tensors (x, w [, b] -> y) and launches for the problem's dtype.
// stream_stores: the pipe kernel writes y with streaming stores (store_vec16).
template <bool kLayerNorm>
Status run_norm_rows(OpCall& call, float eps, float w_offset, bool stream_stores) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  const size_t inputs = kLayerNorm ? 3 : 2;
  if (call.inputs.size() != inputs || call.outputs.size() != 1)
    return Status::bad_input("cuda " + call.problem.op + ": expected inputs x, w" +
                             (kLayerNorm ? ", b" : "") + " and output y");
  const DType dtype = call.problem.dtype;
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(x, dtype, "x"));
  DNNB_TRY(expect_tensor(y, dtype, "y"));
  DNNB_TRY(expect_tensor(call.inputs[1], dtype, "w"));
  if (kLayerNorm) DNNB_TRY(expect_tensor(call.inputs[2], dtype, "b"));
  if (y.shape != x.shape || x.ndim() == 0)
    return Status::bad_input("cuda " + call.problem.op + ": y must have x's shape, x at least 1-d");
  for (size_t k = 1; k < inputs; ++k)
    if (call.inputs[k].shape != Shape{x.shape.back()})
      return Status::bad_input("cuda " + call.problem.op + ": " + (k == 1 ? "w" : "b") +
                               " must have shape [" + std::to_string(x.shape.back()) + "]");
  return dispatch_float(dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    NormArgs<T> a;
    auto xv = make_row_view<T>(x);
    if (!xv) return xv.status();
    auto yv = make_row_view<T>(y);
    if (!yv) return yv.status();
    auto wv = make_row_view<T>(call.inputs[1]);
    if (!wv) return wv.status();
    a.x = *xv;
    a.y = *yv;
    a.w = *wv;
    if (kLayerNorm) {
      auto bv = make_row_view<T>(call.inputs[2]);
      if (!bv) return bv.status();
      a.b = *bv;
    }
    a.rows = xv->ri.rows;
    a.cols = xv->ri.cols;
    a.eps = eps;
    a.w_offset = w_offset;
    a.stream_stores = stream_stores;
    return launch_norm_rows<T, kLayerNorm>(**device, a);
  });
}

}  // namespace dnnb::cuda_kernels
