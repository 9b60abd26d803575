// Row normalisation, shared by layernorm (kLayerNorm = true) and rmsnorm:
//   layernorm: y = (x - mean) / sqrt(var + eps) * w + b      (biased variance)
//   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * (w + w_offset) (w_offset 0: torch, 1: gemma)
// all in f32, rounded once.
//
// Kernels:
//  - registers (cols <= 16384): the row is read once into registers (EPT = 8 or 32 floats per
//    thread, 16-byte loads); layernorm takes the mean, then the sum of squared deviations from
//    the registers (two-pass variance, no cancellation), rmsnorm the sum of squares; w and b are
//    read with 16-byte loads at write time (they stay in L2/L1: every row reads the same N
//    values). Bytes: x read once, y written once, w/b once from DRAM: the minimum. Launch shape:
//    register_rows_launch (cuda_common.cuh). Rows of 1025..8192 columns take norm_packed_kernel
//    in the default plan (the row as raw dtype vectors, more rows per SM): see NormPlan.
//  - long (cols > 16384, and the "smem" variant above 1024): one block of up to 512 threads per
//    row streams x once, keeping it in shared memory (up to 51200 columns), so x is read once;
//    longer rows read x from global memory again in each later pass (mostly L2 hits).
//  - pipe (the default, f16/bf16 rows of 1025..8192 columns): norm_pipe_kernel, the packed
//    kernel's row math in persistent blocks that prefetch the next rows into shared memory
//    (row_pipe.cuh).
#pragma once
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/row_pipe.cuh"

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
  int group = 32;        // threads per row (registers kernel)
  bool cache_x = false;  // long kernel: keep the row in shared memory between passes
  bool stream_stores = false;  // pipe kernel: y with streaming stores (store_vec16)
};

// The normalised values of one vector (b unused for rmsnorm): the one expression every norm
// kernel uses, so they agree bit for bit.
template <typename T, bool kLayerNorm>
__device__ __forceinline__ void normalize_vec(float (&o)[kVec<T>], const float (&v)[kVec<T>],
                                              const float (&w)[kVec<T>],
                                              const float (&b)[kVec<T>], float mean, float rstd,
                                              float w_offset) {
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) {
    if constexpr (kLayerNorm)
      o[k] = (v[k] - mean) * rstd * w[k] + b[k];
    else
      o[k] = v[k] * rstd * (w[k] + w_offset);
  }
}

// y for the vector of columns [c, c + kVec) given the row statistics.
template <typename T, bool kLayerNorm, typename I>
__device__ __forceinline__ void store_normalized(T* y_row, const NormArgs<T>& a, I c, I cols,
                                                 const float (&v)[kVec<T>], float mean,
                                                 float rstd) {
  float w[kVec<T>];
  load_vec<T, I>(w, a.w, a.w.data, c, cols, 0.f);
  float b[kVec<T>];
  if constexpr (kLayerNorm) {
    load_vec<T, I>(b, a.b, a.b.data, c, cols, 0.f);
  } else {
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) b[k] = 0.f;  // unused
  }
  float o[kVec<T>];
  normalize_vec<T, kLayerNorm>(o, v, w, b, mean, rstd, a.w_offset);
  store_vec<T, I>(y_row, a.y, c, cols, o);
}

template <typename T, int EPT, bool kLayerNorm>
__global__ void __launch_bounds__(kRegisterRowsMaxThreads<EPT>, 1) norm_regs_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int VPT = EPT / W;
  __shared__ float scratch[2][32];
  const int group = a.group;
  const int t = threadIdx.x % group;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  if (row >= a.rows) return;  // whole spare warps of the last block (warp-per-row only)
  const T* x_row = a.x.row(row);
  const int cols = static_cast<int>(a.cols);  // <= kMaxRegisterCols: 32-bit column math

  float v[VPT][W];
#pragma unroll
  for (int j = 0; j < VPT; ++j) load_vec<T, int>(v[j], a.x, x_row, (j * group + t) * W, cols, 0.f);

  const float inv_cols = 1.f / static_cast<float>(cols);
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
      const float d = (j * group + t) * W + k < cols ? v[j][k] - mean : 0.f;
      q += d * d;
    }
  q = group_reduce(q, SumOp{}, 0.f, group, scratch[1]);
  const float rstd = 1.f / sqrtf(q * inv_cols + a.eps);  // IEEE sqrt and division: once per row

  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int c = (j * group + t) * W;
    if (c < cols) store_normalized<T, kLayerNorm, int>(y_row, a, c, cols, v[j], mean, rstd);
  }
}

// Streaming kernel: 16 elements per thread per iteration (4 or 2 16-byte loads in flight), about
// cols / 64 threads per row (32 to 512): short rows share an SM, long ones keep enough loads in
// flight.
template <typename T>
inline constexpr int kNormLongUnroll = 16 / kVec<T>;
inline constexpr int kNormLongThreads = 512;
inline constexpr int64_t kNormCacheBytes = 200 * 1024;  // of the H100/H200's 227 KB per block

// One block per row. Pass 1 streams x from global memory (sum for layernorm, sum of squares
// for rmsnorm), keeping it in shared memory as floats when cache_x; later passes (squared
// deviations for layernorm, then the write) read the cache, or x again from global memory.
template <typename T, bool kLayerNorm>
__global__ void __launch_bounds__(kNormLongThreads, 1) norm_long_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int U = kNormLongUnroll<T>;
  extern __shared__ float4 cached_x4[];
  float* cached = reinterpret_cast<float*>(cached_x4);
  __shared__ float scratch[2][32];
  const int64_t row = blockIdx.x;
  const int n = blockDim.x;
  const int64_t step = static_cast<int64_t>(n) * W;
  const int64_t first = static_cast<int64_t>(threadIdx.x) * W;
  const T* x_row = a.x.row(row);
  const float inv_cols = 1.f / static_cast<float>(a.cols);
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

  float acc = 0.f;  // layernorm: sum x; rmsnorm: sum x^2
  for (int64_t c = first; c < a.cols; c += step * U) {
    float v[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u) load_vec<T, int64_t>(v[u], a.x, x_row, c + u * step, a.cols, 0.f);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (a.cache_x && c + u * step < a.cols) {
#pragma unroll
        for (int k = 0; k < W; k += 4)
          *reinterpret_cast<float4*>(cached + c + u * step + k) =
              make_float4(v[u][k], v[u][k + 1], v[u][k + 2], v[u][k + 3]);
      }
#pragma unroll
      for (int k = 0; k < W; ++k) acc += kLayerNorm ? v[u][k] : v[u][k] * v[u][k];
    }
  }
  acc = group_reduce(acc, SumOp{}, 0.f, n, scratch[0]);
  float mean = 0.f;
  float q = acc;
  if constexpr (kLayerNorm) {
    mean = acc * inv_cols;
    q = 0.f;
    for (int64_t c = first; c < a.cols; c += step * U) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) read(v[u], c + u * step, mean);  // padding reads mean: adds 0
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < W; ++k) q += (v[u][k] - mean) * (v[u][k] - mean);
    }
    q = group_reduce(q, SumOp{}, 0.f, n, scratch[1]);
  }
  const float rstd = 1.f / sqrtf(q * inv_cols + a.eps);

  T* y_row = a.y.row(row);
  for (int64_t c = first; c < a.cols; c += step) {
    float v[W];
    read(v, c, 0.f);
    store_normalized<T, kLayerNorm, int64_t>(y_row, a, c, a.cols, v, mean, rstd);
  }
}

// The default for rows of 1025..8192 columns (measured 2026-11-21 as the "packed" variant at
// 16384 x 8192: layernorm f32 269 us against 322, 16-bit 208 against 243; rmsnorm 16-bit 189
// against 214, f32 equal): the register kernel with the row kept as raw
// dtype vectors (16 registers per thread for 16-bit, 32 for f32, at 32 elements per thread),
// converted to f32 in each pass (exact, so the results equal the default kernel's bit for bit:
// same per-thread order, same reductions). The launch bound asks for kNormPackedMinBlocks rows
// per SM, against 2 (f32) / 3 (16-bit) for norm_regs_kernel: 64 KB (16-bit) / 96 KB (f32) of
// rows per SM, so one row's loads overlap other rows' reductions and writes.
inline constexpr int kNormPackedThreads = 256;  // 8192 columns at 32 per thread
inline constexpr int64_t kNormPackedMaxCols = kNormPackedThreads * 32;
template <typename T>
inline constexpr int kNormPackedMinBlocks = sizeof(T) == 4 ? 3 : 4;  // <= 80 / 64 registers

template <typename T, bool kLayerNorm>
__global__ void __launch_bounds__(kNormPackedThreads, kNormPackedMinBlocks<T>)
    norm_packed_kernel(NormArgs<T> a) {
  constexpr int W = kVec<T>;
  constexpr int VPT = 32 / W;
  __shared__ float scratch[2][32];
  const int t = threadIdx.x;  // one block per row: group == blockDim.x
  const int group = blockDim.x;
  const int64_t row = blockIdx.x;
  const T* x_row = a.x.row(row);
  const int cols = static_cast<int>(a.cols);

  Vec16<T> raw[VPT];
#pragma unroll
  for (int j = 0; j < VPT; ++j)
    load_raw_vec<T, int>(raw[j], x_row, a.x.ri.col_stride, a.x.vec, (j * group + t) * W, cols);

  const float inv_cols = 1.f / static_cast<float>(cols);
  float mean = 0.f;
  if constexpr (kLayerNorm) {
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < W; ++k) s += element_float(raw[j], k);  // padding reads 0
    mean = group_reduce(s, SumOp{}, 0.f, group, scratch[0]) * inv_cols;
  }
  float q = 0.f;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float d = (j * group + t) * W + k < cols ? element_float(raw[j], k) - mean : 0.f;
      q += d * d;
    }
  q = group_reduce(q, SumOp{}, 0.f, group, scratch[1]);
  const float rstd = 1.f / sqrtf(q * inv_cols + a.eps);

  T* y_row = a.y.row(row);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int c = (j * group + t) * W;
    if (c < cols) {
      float v[W];
#pragma unroll
      for (int k = 0; k < W; ++k) v[k] = element_float(raw[j], k);
      store_normalized<T, kLayerNorm, int>(y_row, a, c, cols, v, mean, rstd);
    }
  }
}

// The default ("pipe") plan for f16/bf16 (row_pipe.cuh has the pipeline and why): rows of
// 1025..8192 columns, x rows 16-byte aligned with cols % 8 == 0, in persistent blocks of
// cols / kEpt threads (RowPipeShape) that keep the next rows of x in flight in shared memory
// (stages of 16 KB) while the current row is reduced and written. The row math is
// norm_packed_kernel's except each thread's sums, taken in four partial sums (session 5), so
// results differ from "packed" within the rounding of an f32 sum.
// w + w_offset and b are converted to f32 once per block into shared memory (each thread its own
// vectors, read back by that thread: no barrier): with the row stages taking most of the SM's
// shared memory, the L1 left could not hold them, and re-reading them from L2 for every row would
// be as much L2 traffic as x itself; in registers (16 each per thread) they spill.
// Per SM (the default: 2 blocks of 512 threads, 2 stages of 16 KB): layernorm 2 x (32 KB + 64 KB
// of f32 w and b) = 192 KB, rmsnorm 2 x (32 KB + 32 KB) = 128 KB, one row per block ahead (2
// stages beat rmsnorm's earlier 3, session 6: row_pipe.cuh).
// Not taken (the default plan runs instead): f32 (already at the copy rate with the default),
// other lengths, unaligned rows.
// Launch shapes (row_pipe.cuh, RowPipeShape): the default 16 columns per thread in blocks of 512,
// 2 per SM (measured 2026-11-21, session 4, as variant "pipe16" at 16384 x 8192: layernorm bf16
// 160 us against 165, f16 154 against 155; rmsnorm bf16 152 against 157, f16 152 against 156);
// "pipe32" the earlier 32 columns per thread and 3 blocks per SM (<= 80 registers); "pipe4" 4
// blocks (<= 64 registers: spills 32-72 bytes for bf16, slower).
inline constexpr int64_t kNormPipeMaxCols = kRowPipeMaxCols;

// Dynamic shared memory of norm_pipe_kernel: the stages (`block` x kEpt elements each), then
// w + w_offset and b (layernorm) as f32 (`block` x kEpt floats each).
template <typename T, bool kLayerNorm, typename Shape>
inline int norm_pipe_smem_bytes(int block) {
  return (Shape::kStages * static_cast<int>(sizeof(T)) +
          (kLayerNorm ? 2 : 1) * static_cast<int>(sizeof(float))) *
         block * Shape::kEpt;
}

// kExact: the row is exactly blockDim.x * Shape::kEpt columns, so every vector of every thread is
// inside it: no bounds tests, no padding (as softmax_pipe_kernel's).
template <typename T, bool kLayerNorm, typename Shape, bool kExact = false>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks)
    norm_pipe_kernel(NormArgs<T> a) {
  static_assert(sizeof(T) == 2, "the pipe norm kernel holds 16-bit rows");
  constexpr int W = kVec<T>;
  constexpr int VPT = Shape::kEpt / W;
  constexpr int S = Shape::kStages;
  extern __shared__ float4 pipe_smem[];
  const int group = blockDim.x;  // one row per block at a time
  const int stage_elems = group * Shape::kEpt;
  T* const stages = reinterpret_cast<T*>(pipe_smem);
  // w + w_offset and b as f32, converted once per block (session 6: the per-row conversions and
  // the offset add were 2-3 of the ~18 instructions per element). Float4 k of vector j of thread
  // t at [(j * kF4 + k) * group + t]: a warp's 16-byte reads are contiguous (no bank conflicts).
  constexpr int kF4 = W / 4;
  float4* const w_smem = reinterpret_cast<float4*>(stages + S * stage_elems);
  float4* const b_smem = w_smem + VPT * kF4 * group;  // layernorm only
  // Block reductions alternate between the two buffers (layernorm: mean, variance; rmsnorm: by
  // row parity), so no reduction overwrites a buffer a slower warp still reads.
  __shared__ float scratch[2][32];
  const int t = threadIdx.x;
  const int cols = static_cast<int>(a.cols);  // <= kNormPipeMaxCols
  const int64_t step = gridDim.x;
  const float inv_cols = 1.f / static_cast<float>(cols);
  const auto inside = [&](int j) { return kExact || (j * group + t) * W < cols; };

#pragma unroll
  for (int s = 0; s < S - 1; ++s) {  // fill: this block's first S - 1 rows
    const int64_t r = blockIdx.x + s * step;
    pipe_copy_row<T, VPT, kExact>(stages + s * stage_elems, r < a.rows ? a.x.row(r) : nullptr, t,
                                  group, cols);
  }
#pragma unroll
  for (int j = 0; j < VPT; ++j) {  // this thread's w and b vectors, once (any layout of w, b)
    const int c = (j * group + t) * W;
    if (inside(j)) {
      float v[W];
      load_vec<T, int>(v, a.w, a.w.data, c, cols, 0.f);
#pragma unroll
      for (int k = 0; k < kF4; ++k)
        w_smem[(j * kF4 + k) * group + t] = make_float4(v[4 * k] + a.w_offset, v[4 * k + 1] + a.w_offset,
                                                        v[4 * k + 2] + a.w_offset, v[4 * k + 3] + a.w_offset);
      if constexpr (kLayerNorm) {
        load_vec<T, int>(v, a.b, a.b.data, c, cols, 0.f);
#pragma unroll
        for (int k = 0; k < kF4; ++k)
          b_smem[(j * kF4 + k) * group + t] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
      }
    }
  }

  int cur = 0;     // stage of `row`
  int parity = 0;  // rmsnorm's scratch buffer for this row
  for (int64_t row = blockIdx.x; row < a.rows; row += step) {
    const int64_t ahead = row + (S - 1) * step;
    const int fill = cur == 0 ? S - 1 : cur - 1;  // the stage the previous row used
    pipe_copy_row<T, VPT, kExact>(stages + fill * stage_elems,
                                  ahead < a.rows ? a.x.row(ahead) : nullptr, t, group, cols);
    cp_async_wait<S - 1>();  // this thread's copies of `row` have landed
    const T* stage = stages + cur * stage_elems;

    // The row in f32, converted once (it was converted in each of the three passes: 2-3
    // instructions per element, Nsight Compute, session 5); padding vectors read 0.
    float v[VPT][W];
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int c = (j * group + t) * W;
      if (inside(j)) {  // cols % W == 0: the vector is whole
        const Vec16<T> raw = *reinterpret_cast<const Vec16<T>*>(stage + c);
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = element_float(raw, k);
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = 0.f;
      }
    }

    // Sums in four partial sums added pairwise: shorter dependency chains than one running sum
    // (the rounding is no worse).
    float mean = 0.f;
    if constexpr (kLayerNorm) {
      float s4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < VPT; ++j)
#pragma unroll
        for (int k = 0; k < W; ++k) s4[k % 4] += v[j][k];  // padding reads 0
      mean = group_reduce((s4[0] + s4[1]) + (s4[2] + s4[3]), SumOp{}, 0.f, group, scratch[0]) * inv_cols;
    }
    float q4[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      // cols % W == 0: a vector is all inside the row or all padding, so one test per vector.
      if (inside(j)) {
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float d = v[j][k] - mean;
          q4[k % 4] += d * d;
        }
      }
    }
    const float q = group_reduce((q4[0] + q4[1]) + (q4[2] + q4[3]), SumOp{}, 0.f, group,
                                 scratch[kLayerNorm ? 1 : parity]);
    const float rstd = 1.f / sqrtf(q * inv_cols + a.eps);

    T* y_row = a.y.row(row);
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int c = (j * group + t) * W;
      if (inside(j)) {
        float w[W];
        float b[W];
#pragma unroll
        for (int k = 0; k < kF4; ++k) {
          const float4 w4 = w_smem[(j * kF4 + k) * group + t];
          w[4 * k] = w4.x;
          w[4 * k + 1] = w4.y;
          w[4 * k + 2] = w4.z;
          w[4 * k + 3] = w4.w;
          float4 b4 = make_float4(0.f, 0.f, 0.f, 0.f);  // rmsnorm: unused
          if constexpr (kLayerNorm) b4 = b_smem[(j * kF4 + k) * group + t];
          b[4 * k] = b4.x;
          b[4 * k + 1] = b4.y;
          b[4 * k + 2] = b4.z;
          b[4 * k + 3] = b4.w;
        }
        float o[W];
        // w already holds w + w_offset (the f32 sum normalize_vec would take: the same bits);
        // adding -0 changes no value (not even a zero's sign), so the compiler drops the add.
        normalize_vec<T, kLayerNorm>(o, v[j], w, b, mean, rstd, -0.f);
        if constexpr (kExact) {  // whole aligned vectors (y rows checked by the launcher)
          Vec16<T> p;
#pragma unroll
          for (int k = 0; k < W; ++k) p.v[k] = from_float<T>(o[k]);
          store_vec16(y_row + c, p, a.stream_stores);
        } else {
          store_vec<T, int>(y_row, a.y, c, cols, o, a.stream_stores);
        }
      }
    }
    cur = next_stage<S>(cur);
    parity ^= 1;
  }
}

// Launches norm_pipe_kernel when `a` fits it (see there); false: nothing launched.
template <typename T, bool kLayerNorm, typename Shape>
Result<bool> try_launch_norm_pipe(const CudaDevice& device, const NormArgs<T>& a) {
  if constexpr (sizeof(T) != 2) {
    return false;
  } else {
    constexpr int W = kVec<T>;
    if (a.cols <= 32 * 32 || a.cols > kNormPipeMaxCols || a.cols % W != 0 || !a.x.vec)
      return false;
    const int block = static_cast<int>(round_up(ceil_div(a.cols, Shape::kEpt), 32));
    const int smem = norm_pipe_smem_bytes<T, kLayerNorm, Shape>(block);
    const int max_smem = norm_pipe_smem_bytes<T, kLayerNorm, Shape>(Shape::kThreads);
    // Exact rows with whole aligned vectors of y too: the kernel without bounds tests.
    if (a.cols == static_cast<int64_t>(block) * Shape::kEpt && a.y.vec)
      return launch_persistent_rows(device, norm_pipe_kernel<T, kLayerNorm, Shape, true>, block,
                                    smem, max_smem, a.rows, a);
    return launch_persistent_rows(device, norm_pipe_kernel<T, kLayerNorm, Shape>, block, smem,
                                  max_smem, a.rows, a);
  }
}

// How rows are placed (the layernorm and rmsnorm variants).
enum class NormPlan {
  packed,  // variant "packed" (the default until 2026-11-21, session 3): norm_packed_kernel for
           // 1025..8192 columns, else as regs
  regs,  // registers (f32 copies) up to kMaxRegisterCols, then the long kernel (cached when it
         // fits): the default before 2026-11-21, variant "regs"
  smem,  // registers (warp per row) up to 1024 columns, then the long kernel with the cache
  pipe,  // the default ("" variant; measured 2026-11-21 as variant "pipe": 16-bit layernorm
         // 155-169 us against packed's 208-214, rmsnorm 155-157 against 188-190): norm_pipe_kernel
         // where it applies (f16/bf16, persistent blocks, rows prefetched into shared memory
         // with cp.async), every other shape (f32 too) as packed
  pipe32,  // as pipe with 32 columns per thread, 3 blocks per SM (RowPipe32x3: the default's
           // shape until 2026-11-21, session 4)
  pipe4,   // as pipe with 4 blocks per SM (RowPipe32x4)
  pipe16,  // as pipe with 16 columns per thread in blocks of up to 512 (RowPipe16x2: the default)
  pipe16s3,  // as pipe16 with 3 stages (rmsnorm's default until 2026-11-21, session 6)
  pipe_cs,   // as pipe with y written by streaming stores (store_vec16; rmsnorm's default since
             // session 13)
};

template <typename T, bool kLayerNorm>
Status launch_norm_rows(const CudaDevice& device, NormArgs<T> a, NormPlan plan) {
  if (a.rows == 0 || a.cols == 0) return Status::ok();
  if (plan == NormPlan::pipe_cs) {
    a.stream_stores = true;
    plan = NormPlan::pipe;
  }
  if (plan == NormPlan::pipe || plan == NormPlan::pipe32 || plan == NormPlan::pipe4 ||
      plan == NormPlan::pipe16 || plan == NormPlan::pipe16s3) {
    auto launched = plan == NormPlan::pipe32     ? try_launch_norm_pipe<T, kLayerNorm, RowPipe32x3>(device, a)
                    : plan == NormPlan::pipe4    ? try_launch_norm_pipe<T, kLayerNorm, RowPipe32x4>(device, a)
                    : plan == NormPlan::pipe16s3 ? try_launch_norm_pipe<T, kLayerNorm, RowPipe16x2s3>(device, a)
                                                 : try_launch_norm_pipe<T, kLayerNorm, RowPipe16x2>(device, a);
    if (!launched) return launched.status();
    if (*launched) return Status::ok();
    plan = NormPlan::packed;
  }
  if (a.rows > INT32_MAX) return Status::unsupported("too many rows for one launch");
  if (plan == NormPlan::packed && a.cols > 32 * 32 && a.cols <= kNormPackedMaxCols) {
    const int block = static_cast<int>(round_up(ceil_div(a.cols, 32), 32));
    a.group = block;
    norm_packed_kernel<T, kLayerNorm>
        <<<static_cast<unsigned>(a.rows), block, 0, device.stream()>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  }
  const int64_t max_register_cols = plan == NormPlan::smem ? 32 * 32 : kMaxRegisterCols;
  if (a.cols <= max_register_cols) {
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
template <bool kLayerNorm>
Status run_norm_rows(OpCall& call, float eps, float w_offset, NormPlan plan) {
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
    return launch_norm_rows<T, kLayerNorm>(**device, a, plan);
  });
}

}  // namespace dnnb::cuda_kernels
