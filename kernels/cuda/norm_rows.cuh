// Row normalisation, shared by layernorm (kLayerNorm = true) and rmsnorm:
//   layernorm: y = (x - mean) / sqrt(var + eps) * w + b      (biased variance)
//   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * (w + w_offset) (w_offset 0: torch, 1: gemma)
// all in f32, rounded once.
//
// Two kernels:
//  - registers (cols <= 16384): the row is read once into registers (EPT = 8 or 32 floats per
//    thread, 16-byte loads); layernorm takes the mean, then the sum of squared deviations from
//    the registers (two-pass variance, no cancellation), rmsnorm the sum of squares; w and b are
//    read with 16-byte loads at write time (they stay in L2/L1: every row reads the same N
//    values). Bytes: x read once, y written once, w/b once from DRAM: the minimum. Launch shape:
//    register_rows_launch (cuda_common.cuh). Expected ~85-90% of copy bandwidth at 8192 cols.
//  - long (cols > 16384): one 512-thread block per row streams the row from global memory:
//    sum, squared deviations (layernorm only), then the write pass. The re-reads of a block's
//    row mostly hit L2. Hidden sizes this large are rare; this path is for completeness.
#pragma once
#include "kernels/cuda/cuda_common.cuh"

namespace dnnb::cuda_kernels {

template <typename T>
struct NormArgs {
  RowView<T> x;
  RowView<T> y;
  RowView<T> w;  // [cols], one row
  RowView<T> b;  // [cols], layernorm only
  int64_t rows = 0;
  int64_t cols = 0;
  float eps = 0.f;
  float w_offset = 0.f;
  int group = 32;
};

// y for the vector of columns [c, c + kVec) given the row statistics.
template <typename T, bool kLayerNorm>
__device__ __forceinline__ void store_normalized(T* y_row, const NormArgs<T>& a, int64_t c,
                                                 const float (&v)[kVec<T>], float mean, float rstd) {
  float w[kVec<T>];
  load_vec<T>(w, a.w, a.w.data, c, a.cols, 0.f);
  float o[kVec<T>];
  if constexpr (kLayerNorm) {
    float b[kVec<T>];
    load_vec<T>(b, a.b, a.b.data, c, a.cols, 0.f);
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) o[k] = (v[k] - mean) * rstd * w[k] + b[k];
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) o[k] = v[k] * rstd * (w[k] + a.w_offset);
  }
  store_vec<T>(y_row, a.y, c, a.cols, o);
}

template <typename T, int EPT, bool kLayerNorm>
__global__ void __launch_bounds__(kRegisterRowsMaxThreads<EPT>) norm_regs_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int VPT = EPT / W;
  __shared__ float scratch[2][32];
  const int group = a.group;
  const int t = threadIdx.x % group;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= a.rows) return;  // whole spare warps of the last block (warp-per-row only)
  const T* x_row = a.x.row(row);

  float v[VPT][W];
#pragma unroll
  for (int j = 0; j < VPT; ++j) load_vec<T>(v[j], a.x, x_row, (static_cast<int64_t>(j) * group + t) * W, a.cols, 0.f);

  const float inv_cols = 1.f / static_cast<float>(a.cols);
  float mean = 0.f;
  if constexpr (kLayerNorm) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < W; ++k) s += v[j][k];  // padding reads 0
    mean = group_reduce(s, SumOp{}, 0.f, group, scratch[0]) * inv_cols;
  }
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int64_t c = (static_cast<int64_t>(j) * group + t) * W + k;
      const float d = c < a.cols ? v[j][k] - mean : 0.f;
      q += d * d;
    }
  q = group_reduce(q, SumOp{}, 0.f, group, scratch[1]);
  const float rstd = 1.f / sqrtf(q * inv_cols + a.eps);  // IEEE sqrt and division: once per row

  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int64_t c = (static_cast<int64_t>(j) * group + t) * W;
    if (c < a.cols) store_normalized<T, kLayerNorm>(y_row, a, c, v[j], mean, rstd);
  }
}

// Rows longer than the register capacity: one block per row, streaming passes (see above).
template <typename T, bool kLayerNorm>
__global__ void __launch_bounds__(512) norm_long_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int U = 4;
  __shared__ float scratch[2][32];
  const int64_t row = blockIdx.x;
  const int n = blockDim.x;
  const int64_t step = static_cast<int64_t>(n) * W;
  const int64_t first = static_cast<int64_t>(threadIdx.x) * W;
  const T* x_row = a.x.row(row);
  const float inv_cols = 1.f / static_cast<float>(a.cols);

  float mean = 0.f;
  if constexpr (kLayerNorm) {
    float s = 0.f;
    for (int64_t c = first; c < a.cols; c += step * U) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) load_vec<T>(v[u], a.x, x_row, c + u * step, a.cols, 0.f);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < W; ++k) s += v[u][k];
    }
    mean = group_reduce(s, SumOp{}, 0.f, n, scratch[0]) * inv_cols;
  }
  float q = 0.f;
  for (int64_t c = first; c < a.cols; c += step * U) {
    float v[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u) load_vec<T>(v[u], a.x, x_row, c + u * step, a.cols, mean);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < W; ++k) q += (v[u][k] - mean) * (v[u][k] - mean);  // padding reads mean
  }
  q = group_reduce(q, SumOp{}, 0.f, n, scratch[1]);
  const float rstd = 1.f / sqrtf(q * inv_cols + a.eps);

  T* y_row = a.y.row(row);
  for (int64_t c = first; c < a.cols; c += step) {
    float v[W];
    load_vec<T>(v, a.x, x_row, c, a.cols, 0.f);
    store_normalized<T, kLayerNorm>(y_row, a, c, v, mean, rstd);
  }
}

template <typename T, bool kLayerNorm>
Status launch_norm_rows(const CudaDevice& device, NormArgs<T> a) {
  if (a.rows == 0 || a.cols == 0) return Status::ok();
  if (a.cols <= kMaxRegisterCols) {
    const RegisterRowsLaunch l = register_rows_launch(a.rows, a.cols, device.sm_count());
    if (l.grid > INT32_MAX) return Status::unsupported("too many rows for one launch");
    a.group = l.group;
    if (l.ept == 8)
      norm_regs_kernel<T, 8, kLayerNorm><<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
    else
      norm_regs_kernel<T, 32, kLayerNorm><<<static_cast<unsigned>(l.grid), l.block, 0, device.stream()>>>(a);
  } else {
    if (a.rows > INT32_MAX) return Status::unsupported("too many rows for one launch");
    norm_long_kernel<T, kLayerNorm><<<static_cast<unsigned>(a.rows), 512, 0, device.stream()>>>(a);
  }
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// Checks the call's tensors (x, w [, b] -> y) and launches for the problem's dtype.
template <bool kLayerNorm>
Status run_norm_rows(OpCall& call, float eps, float w_offset) {
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
    return launch_norm_rows<T, kLayerNorm>(**device, a);
  });
}

}  // namespace dnnb::cuda_kernels
