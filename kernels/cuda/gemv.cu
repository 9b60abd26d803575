// CUDA gemv: y[b] = w @ x[b] for b < B (1..16 vectors; torch.mv per vector), w [N, K], x [B, K],
// f32 accumulation, y [B, N] of the input dtype or f32 (y.dt=f32).
//
// Bound by reading w once: each warp streams R rows of w with 16-byte loads (8 bf16/f16 or 4 f32
// per lane, the lanes of a warp covering 512 contiguous bytes of a row), converts them to f32
// once, and multiplies them with every vector. The vectors are staged in shared memory a chunk
// of K at a time (16 KB per chunk, double-buffered: cp.async fetches chunk i + 1 while chunk i is
// used), so that each block reads x from L2 once per chunk whatever its number of rows, and
// each 16-byte x load from shared memory serves the R rows of a warp. Each lane keeps R x B f32
// partial sums; a butterfly over the warp finishes each one, in a fixed order (deterministic).
//
// Rows per warp: R = 2 for B <= 2, 4 above, so that shared-memory reads stay at most 4x the w
// bytes (B / R) where shared memory has 128 bytes per clock per SM and w arrives at ~15. Blocks of
// 4 warps (8 or 16 rows) keep several blocks, and enough loads in flight, on every SM at
// N = 4096. The batch is rounded up to a power of two (BT) for the template; vectors past B are
// skipped.
//
// Any strides: w rows of unit stride starting 16-byte aligned are read with 16-byte loads, other
// layouts (padded rows, odd offsets, transposed) element by element; x likewise.
#include <cstdlib>

#include "kernels/cuda/gemm.cuh"

namespace dnnb::cuda_kernels {
namespace {

inline constexpr int kGemvThreads = 128;
inline constexpr int kGemvWarps = kGemvThreads / 32;
inline constexpr int kGemvChunkBytes = 16384;  // one x buffer in shared memory

struct GemvArgs {
  const void* w;
  int64_t w_n, w_k;  // element (n, k) of w at w + n * w_n + k * w_k
  const void* x;
  int64_t x_b, x_k;  // element (b, k) of x
  void* y;
  int64_t y_b;  // element (b, n) of y at y + b * y_b + n
  int n, k, batch;
  bool w_vec;  // w_k == 1 and every row 16-byte aligned
  bool x_vec;  // x_k == 1 and every vector 16-byte aligned
  bool out_f32;
};

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

template <typename T, int kBT>
inline constexpr int kGemvChunk = kGemvChunkBytes / (kBT * static_cast<int>(sizeof(T)));  // K per chunk

// Copies x[b][k0 .. k0 + kChunk) for b < batch into xs[b][.], zeros past K.
template <typename T, int kBT>
__device__ __forceinline__ void gemv_load_x(T (*xs)[kGemvChunk<T, kBT>], const GemvArgs& p, int k0) {
  constexpr int V = kVec<T>, kChunk = kGemvChunk<T, kBT>;
  const T* x = static_cast<const T*>(p.x);
  for (int i = threadIdx.x; i < kBT * kChunk / V; i += kGemvThreads) {
    const int b = i / (kChunk / V), c = (i % (kChunk / V)) * V;
    if (b >= p.batch) break;  // i grows with b: the rest are past the batch too
    const int k = k0 + c;
    if (p.x_vec) {
      const int valid = max(0, min(V, p.k - k));
      const T* src = valid > 0 ? x + b * p.x_b + k : x;
      cp_async_16(static_cast<uint32_t>(__cvta_generic_to_shared(&xs[b][c])), src, valid * static_cast<int>(sizeof(T)));
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        xs[b][c + j] = k + j < p.k ? x[b * p.x_b + static_cast<int64_t>(k + j) * p.x_k] : from_float<T>(0.f);
    }
  }
}

template <typename T, int kBT, int R>
__global__ void __launch_bounds__(kGemvThreads) gemv_kernel(const GemvArgs p) {
  constexpr int V = kVec<T>, kChunk = kGemvChunk<T, kBT>;
  // w loads in flight per lane: kUnroll x R of 16 bytes (8 for B <= 2, where little else is).
  constexpr int kUnroll = kBT <= 2 ? 4 : 2;
  __shared__ __align__(16) T xs[2][kBT][kChunk];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row0 = (blockIdx.x * kGemvWarps + warp) * R;
  const T* w = static_cast<const T*>(p.w);

  float acc[R][kBT];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int b = 0; b < kBT; ++b) acc[r][b] = 0.f;

  const int chunks = (p.k + kChunk - 1) / kChunk;
  gemv_load_x<T, kBT>(xs[0], p, 0);
  cp_async_commit();
  for (int ch = 0; ch < chunks; ++ch) {
    if (ch + 1 < chunks) {
      gemv_load_x<T, kBT>(xs[(ch + 1) & 1], p, (ch + 1) * kChunk);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // chunk ch visible to every warp
    const int k0 = ch * kChunk, kc = min(kChunk, p.k - k0);
#pragma unroll kUnroll
    for (int c = lane * V; c < kc; c += 32 * V) {
      float wf[R][V];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int n = min(row0 + r, p.n - 1);  // rows past N repeat the last row; never stored
        load_vec<T, int>(wf[r], w + n * p.w_n, p.w_k, p.w_vec, k0 + c, p.k, 0.f);
      }
#pragma unroll
      for (int b = 0; b < kBT; ++b) {
        if (b >= p.batch) break;
        const Vec16<T> xv = *reinterpret_cast<const Vec16<T>*>(&xs[ch & 1][b][c]);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const float xj = element_float(xv, j);
#pragma unroll
          for (int r = 0; r < R; ++r) acc[r][b] = fmaf(wf[r][j], xj, acc[r][b]);
        }
      }
    }
    __syncthreads();  // every warp is done with this buffer before it is refilled
  }

#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int b = 0; b < kBT; ++b) {
      if (b >= p.batch) break;
      const float v = warp_reduce(acc[r][b], SumOp{});
      const int n = row0 + r;
      if (lane == (r * kBT + b) % 32 && n < p.n) {
        const int64_t at = b * p.y_b + n;
        if (p.out_f32)
          static_cast<float*>(p.y)[at] = v;
        else
          static_cast<T*>(p.y)[at] = from_float<T>(v);
      }
    }
}

template <typename T, int kBT>
Status launch_gemv(const CudaDevice& device, const GemvArgs& p) {
  constexpr int R = kBT <= 2 ? 2 : 4;
  const int64_t blocks = ceil_div(p.n, static_cast<int64_t>(kGemvWarps) * R);
  gemv_kernel<T, kBT, R><<<static_cast<unsigned>(blocks), kGemvThreads, 0, device.stream()>>>(p);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

Status run_gemv(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::gemv_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda gemv: expected inputs w, x and output y");
  const DType in = call.problem.dtype;
  const Tensor& w = call.inputs[0];
  const Tensor& x = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(w, in, "w"));
  DNNB_TRY(expect_tensor(x, in, "x"));
  DNNB_TRY(expect_product_output(y, in));
  if (w.shape != Shape{d->n, d->k} || x.shape != Shape{d->m, d->k} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cuda gemv: operands " + w.describe() + ", " + x.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  if (d->n > INT32_MAX || d->k > INT32_MAX) return Status::unsupported("cuda gemv: dims beyond 2^31 - 1");
  const MatrixStrides sw = matrix_strides(w), sx = matrix_strides(x), sy = matrix_strides(y);
  const int64_t vec = 16 / static_cast<int64_t>(dtype_size(in));
  auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  GemvArgs p{};
  p.w = data_ptr<unsigned char>(w);
  p.w_n = sw.row;
  p.w_k = sw.col;
  p.x = data_ptr<unsigned char>(x);
  p.x_b = sx.row;
  p.x_k = sx.col;
  p.y = data_ptr<unsigned char>(y);
  p.y_b = sy.row;
  p.n = static_cast<int>(d->n);
  p.k = static_cast<int>(d->k);
  p.batch = static_cast<int>(d->m);
  p.w_vec = aligned(p.w) && p.w_k == 1 && (p.n == 1 || p.w_n % vec == 0);
  p.x_vec = aligned(p.x) && p.x_k == 1 && (p.batch == 1 || p.x_b % vec == 0);
  p.out_f32 = y.dtype == DType::f32;
  return dispatch_float(in, [&](auto tag) -> Status {
    using T = decltype(tag);
    if (p.batch <= 1) return launch_gemv<T, 1>(**device, p);
    if (p.batch <= 2) return launch_gemv<T, 2>(**device, p);
    if (p.batch <= 4) return launch_gemv<T, 4>(**device, p);
    if (p.batch <= 8) return launch_gemv<T, 8>(**device, p);
    return launch_gemv<T, 16>(**device, p);
  });
}

ProductImplementation gemv_implementation() {
  ProductImplementation p;
  p.op = "gemv";
  p.run = run_gemv;
  return p;
}

DNNB_REGISTER(register_product(gemv_implementation()));

}  // namespace
}  // namespace dnnb::cuda_kernels
