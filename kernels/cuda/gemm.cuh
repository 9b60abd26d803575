// The CUDA GEMM engine's interface: y[b] = A[b] B[b] (+ bias) for matmul and linear, with A
// (M x K) and B (K x N) at any element strides, f32 accumulation, y contiguous in its last dim.
//
// Kernels (docs/cuda.md, "Family 2"):
//   gemm_mma.cuh    f16/bf16 on the tensor cores, mma.sync m16n8k16, a cp.async pipeline over
//                   swizzled shared memory; element-wise loads for operands it cannot copy in
//                   16-byte pieces.
//   gemm_f32.cuh    f32: a register-blocked FMA kernel (full f32), and mma.sync m16n8k8 tf32
//                   when the problem allows tf32 (tf32=1).
//   sm90a/gemm_wgmma.cu  f16/bf16 with wgmma fed by TMA (Hopper only), for products of at
//                   least 64 x 64 whose operands TMA can describe.
// launch_gemm picks among them from the dtypes, strides and sizes; every operand layout and
// size is handled by one of them (no silent fallback, no unsupported layout).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/gemm_desc.h"

namespace dnnb::cuda_kernels {

// One product, as the kernels address it: element (b, m, k) of A at a + b*a_batch + m*a_m +
// k*a_k, (b, k, n) of B at b + b*b_batch + k*b_k + n*b_n, (b, m, n) of y at y + b*y_batch +
// m*y_m + n. Strides in elements; the pointers have the tensors' offsets applied.
struct GemmCall {
  DType in_dtype = DType::f32;   // A, B and the bias
  DType out_dtype = DType::f32;  // y
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t a_batch = 0, a_m = 0, a_k = 0;
  const void* b = nullptr;
  int64_t b_batch = 0, b_k = 0, b_n = 0;
  const void* bias = nullptr;  // [N] or nullptr
  int64_t bias_stride = 1;
  void* y = nullptr;
  int64_t y_batch = 0, y_m = 0;
  bool tf32 = false;  // f32 only: A and B may be rounded to tf32 (mma.sync m16n8k8)
};

// How a thread walks its elements of a kRows x kBK tile in the kernels' element-wise loads:
// element i of the thread is (row r + i dr, k kq + i dk). Along k (k_fast), consecutive
// threads take consecutive k of a row; otherwise consecutive rows at one k. So the loads
// coalesce along the operand's smaller stride, and a thread's addresses are one base plus i
// times one step (two registers, not one offset per element).
template <int kRows, int kBK, int kThreads>
struct TileWalk {
  static_assert(kThreads % kBK == 0 && kThreads % kRows == 0, "whole rows or k columns per pass");
  static constexpr int kCount = kRows * kBK / kThreads;  // elements per thread
  int r, kq, dr, dk;
  __device__ __forceinline__ TileWalk(int tid, bool k_fast) {
    if (k_fast) {
      r = tid / kBK;
      kq = tid % kBK;
      dr = kThreads / kBK;
      dk = 0;
    } else {
      r = tid % kRows;
      kq = tid / kRows;
      dr = 0;
      dk = kThreads / kRows;
    }
  }
  // Loads the thread's elements of the tile at (r0, k0) of an operand whose element (row, k)
  // is at base[row * s_r + k * s_k]: `rows_total` x `k_total`, zero outside.
  template <typename E>
  __device__ __forceinline__ void fetch(E (&v)[kCount], const E* base, int64_t s_r, int64_t s_k, int rows_total,
                                        int k_total, int r0, int k0) const {
    const int gr = r0 + r, gk = k0 + kq;
    const int64_t first = static_cast<int64_t>(gr) * s_r + static_cast<int64_t>(gk) * s_k;
    const int64_t step = static_cast<int64_t>(dr) * s_r + static_cast<int64_t>(dk) * s_k;
#pragma unroll
    for (int i = 0; i < kCount; ++i)
      v[i] = (gr + i * dr < rows_total && gk + i * dk < k_total) ? base[first + i * step] : E(0);
  }
};

// Runs the product on the device's stream. unsupported only for a batch beyond the grid's
// z dim (65535) or a dim beyond 2^31 - 1.
Status launch_gemm(const CudaDevice& device, const GemmCall& g);

// The f16/bf16 mma.sync kernels (gemm_mma.cu) and the f32 kernels (gemm_f32.cu).
Status launch_gemm_mma(const CudaDevice& device, const GemmCall& g);
Status launch_gemm_f32(const CudaDevice& device, const GemmCall& g);
bool gemm_mma_fast_path(const GemmCall& g);

// The wgmma kernel (sm90a/gemm_wgmma.cu): whether it takes this product on this device (compute
// capability 9.0, f16/bf16, M and N >= 64, A with unit k stride and B with unit k or n stride,
// 16-byte aligned rows), and its launch.
bool gemm_wgmma_applies(const GemmCall& g, const CudaDevice& device);
Status launch_gemm_wgmma(const CudaDevice& device, const GemmCall& g);

// ok when y (a product's output) has a buffer, unit stride along its last dim, and the input
// dtype or, for f16/bf16 inputs, f32 (y.dt=f32).
Status expect_product_output(const Tensor& y, DType in_dtype);

// Output tile (tm, tn) of linear tile index t: groups of 8 tile rows are walked column by
// column, so the blocks running at one time share A rows and B columns in L2.
__device__ __forceinline__ void grouped_tile(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n;
  const int group = t / per_group;
  const int first = group * kGroup;
  const int size = min(tiles_m - first, kGroup);
  const int local = t - group * per_group;
  tm = first + local % size;
  tn = local / size;
}

// The three strides of a matrix operand of rank 2 or 3 (batch stride 0 for rank 2).
struct MatrixStrides {
  int64_t batch = 0, row = 0, col = 0;
};
MatrixStrides matrix_strides(const Tensor& t);

// Registers a CUDA (or peer) implementation of a product op: as register_cuda, plus the
// arithmetic unit its bench figures are judged against and an optional workspace size.
struct ProductImplementation {
  std::string op;
  std::string backend = "cuda";
  std::string variant;
  std::string when;
  std::string compute_unit = "f32_fma";
  std::function<Status(OpCall&)> run;
  std::function<Status(const Problem&)> extra;  // op-specific checks for supports()
  std::function<Result<size_t>(const Problem&, const DeviceRuntime&)> workspace_bytes;
};
bool register_product(ProductImplementation p);

}  // namespace dnnb::cuda_kernels
