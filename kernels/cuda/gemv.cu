// CUDA gemv: y[b] = w @ x[b] for b < B (1..16 vectors; torch.mv per vector), w [N, K], x [B, K],
// f32 accumulation, y [B, N] of the input dtype or f32 (y.dt=f32). Bound by reading w once.
//
// f16/bf16: the tensor cores (mma.sync m16n8k16, f32 accumulation) with w as the 16-row A
// operand and the vectors as the 8-column B operand (two B tiles for B > 8). A dot product may
// take its K terms in any order, so the fragments need no shuffling: lane (g, t) = (lane / 4,
// lane % 4) loads 16 bytes (8 elements) of rows g and g + 8 of w and of vector g at the same
// columns 8t .. 8t + 7 of a 32-column step, and the first and second halves of those 16 bytes are
// the k slots {2t, 2t + 1, 2t + 8, 2t + 9} of two mma k-tiles, for A and B alike. So w goes from
// global memory straight into registers with 16-byte loads (4 lanes read 64 contiguous bytes of
// a row), with no conversions and 1 mma per 256 bytes of w per warp: the FMA-pipe cost of 8 x B
// FMAs and 8 conversions per 8 weights is gone, and B = 8 or 16 costs what B = 1 does.
// A block (8 warps) owns 16 rows; its warps take rounds of 8 adjacent 32-column steps of K in
// turn (warp i: steps 8i .. 8i + 7 of each round of 64; 512 contiguous bytes of each of its
// rows), with all 16-byte loads of a round issued before its mmas (8 x 2 x 16 bytes of w per
// lane, 8 KB a warp): the first mma takes a zero word ANDed from every load (GemvArgs::zero, a
// kernel argument the compiler cannot fold), because ptxas otherwise interleaves the loads with
// the mmas and a warp stalls at its first mma with half its loads not yet issued. 126 registers
// at B <= 8: 2 blocks an SM, 128 KB of w in flight an SM. The warps' accumulators are added
// through shared memory in warp order (deterministic). w is read with
// ld.global.nc.L1::no_allocate.L2::256B (read once: keep L1 for x; whole 256-byte DRAM fetches).
// Steps wholly inside K with 16-byte-aligned unit-stride rows take 16-byte loads; the last
// partial step, padded/misaligned/transposed w and strided x are read element by element.
//
// f32 (no tensor-core path at full f32 precision): each warp streams R rows of w with 16-byte
// loads, multiplying each with every vector. The vectors are staged in shared memory a chunk of
// K at a time (16 KB per chunk, double-buffered: cp.async fetches chunk i + 1 while chunk i is
// used), so each block reads x from L2 once per chunk and each 16-byte x load from shared memory
// serves the R rows of a warp. Each lane keeps R x B f32 partial sums; a butterfly over the warp
// finishes each one, in a fixed order. R = 2 for B <= 2, 4 above; blocks of 4 warps; the batch is
// rounded up to a power of two (BT) for the template, vectors past B skipped. Rows that are not
// 16-byte vectors (padded, odd offsets, transposed) are read element by element.
#include <cstdlib>

#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/gemm_mma.cuh"

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
  uint32_t zero;  // 0, unknown to the compiler: the load fence of gemv_mma_kernel
};

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
      gemm::cp_async_16(gemm::smem_addr(&xs[b][c]), src, valid * static_cast<int>(sizeof(T)));
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
  gemm::cp_async_commit();
  for (int ch = 0; ch < chunks; ++ch) {
    if (ch + 1 < chunks) {
      gemv_load_x<T, kBT>(xs[(ch + 1) & 1], p, (ch + 1) * kChunk);
      gemm::cp_async_commit();
      gemm::cp_async_wait<1>();
    } else {
      gemm::cp_async_wait<0>();
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

// ---------------------------------------------------------------------------------------------
// f16/bf16 on the tensor cores (see the top of the file).

inline constexpr int kMmaWarps = 8;
inline constexpr int kMmaThreads = kMmaWarps * 32;
inline constexpr int kMmaRows = 16;   // rows of w per block: the mma's M
inline constexpr int kStepK = 32;     // columns of one warp step: 4 lanes x 8 elements
inline constexpr int kMmaUnroll = 8;  // adjacent steps a warp takes per round, loads all issued first

// 16 bytes read once (w): through the non-coherent path without allocating in L1, L2 fetching
// the whole 256 bytes around a miss from DRAM (.L2::256B).
__device__ __forceinline__ uint4 load_stream16(const void* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

// Elements [k, k + 8) of a row as 16 raw bytes: one 16-byte load when the row allows it and the
// 8 are inside K, else one load per element with zeros at and past `end` (never read).
template <typename T, bool kStream>
__device__ __forceinline__ uint4 load8(const T* row, int64_t stride, bool vec, int k, int end) {
  if (vec && k + 8 <= end) {
    if constexpr (kStream) return load_stream16(row + k);
    return __ldg(reinterpret_cast<const uint4*>(row + k));
  }
  Vec16<T> v;
#pragma unroll
  for (int j = 0; j < 8; ++j) v.v[j] = k + j < end ? row[static_cast<int64_t>(k + j) * stride] : from_float<T>(0.f);
  return *reinterpret_cast<const uint4*>(&v);
}

// d += (rows g, g + 8 of a 16 x 32 slice of w) x (32 x 8 slice of the vectors): the first 8 bytes
// of each lane's loads are one k-tile, the last 8 the other (see the top of the file).
template <typename T>
__device__ __forceinline__ void mma_step(float (&d)[4], const uint4& w_lo, const uint4& w_hi, const uint4& x) {
  const uint32_t a0[4] = {w_lo.x, w_hi.x, w_lo.y, w_hi.y};
  gemm::mma_16816<T>(d, a0, x.x, x.y);
  const uint32_t a1[4] = {w_lo.z, w_hi.z, w_lo.w, w_hi.w};
  gemm::mma_16816<T>(d, a1, x.z, x.w);
}

// Block i: rows [16 i, 16 i + 16) of y for every vector. kNT B tiles of 8 vectors (1 or 2).
template <typename T, int kNT>
__global__ void __launch_bounds__(kMmaThreads) gemv_mma_kernel(const GemvArgs p) {
  constexpr int U = kMmaUnroll;
  __shared__ __align__(16) float part[kMmaWarps][kNT][32][4];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = blockIdx.x * kMmaRows;
  const T* w = static_cast<const T*>(p.w);
  const T* x = static_cast<const T*>(p.x);
  // Rows past N repeat the last row; their sums are never stored.
  const T* w_lo = w + static_cast<int64_t>(min(row0 + g, p.n - 1)) * p.w_n;
  const T* w_hi = w + static_cast<int64_t>(min(row0 + g + 8, p.n - 1)) * p.w_n;
  const T* xr[kNT];
  bool x_on[kNT];  // vector nt * 8 + g exists; absent vectors are zero columns of B
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int b = nt * 8 + g;
    x_on[nt] = b < p.batch;
    xr[nt] = x + static_cast<int64_t>(min(b, p.batch - 1)) * p.x_b;
  }
  float acc[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[nt][c] = 0.f;

  const int steps = (p.k + kStepK - 1) / kStepK;
  const int whole = p.w_vec && p.x_vec ? p.k / kStepK : 0;  // steps of unconditional 16-byte loads
  // Rounds of U x 8 steps, each whole inside `whole`: warp i takes steps s .. s + U - 1, s = U i
  // into the round (the rest then starts at a round's step i for warp i).
  int s = warp * U;
  for (; s - warp * U + U * kMmaWarps <= whole; s += U * kMmaWarps) {
    uint4 a_lo[U], a_hi[U], b[U][kNT];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = (s + u) * kStepK + t * 8;
      a_lo[u] = load_stream16(w_lo + k);
      a_hi[u] = load_stream16(w_hi + k);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
        b[u][nt] = x_on[nt] ? __ldg(reinterpret_cast<const uint4*>(xr[nt] + k)) : make_uint4(0, 0, 0, 0);
    }
    {
      // ptxas otherwise interleaves the loads with the mmas, so a warp stalls at its first mma
      // with only the loads before it in flight: the first mma takes a (zero) word of every
      // load, so all of them are issued before any mma waits.
      uint32_t fence = p.zero;
#pragma unroll
      for (int u = 0; u < U; ++u) fence &= a_lo[u].x & a_hi[u].x & b[u][0].x;
      a_lo[0].x |= fence;
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) mma_step<T>(acc[nt], a_lo[u], a_hi[u], b[u][nt]);
  }
  // The rest (fewer than U steps per warp, or strided/partial rows), step by step.
  for (s += warp - warp * U; s < steps; s += kMmaWarps) {
    const int k = s * kStepK + t * 8;
    const uint4 a_lo = load8<T, true>(w_lo, p.w_k, p.w_vec, k, p.k);
    const uint4 a_hi = load8<T, true>(w_hi, p.w_k, p.w_vec, k, p.k);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint4 b = x_on[nt] ? load8<T, false>(xr[nt], p.x_k, p.x_vec, k, p.k) : make_uint4(0, 0, 0, 0);
      mma_step<T>(acc[nt], a_lo, a_hi, b);
    }
  }

  // The warps' sums, added in warp order. Accumulator c of lane (g, t) in B tile nt is row
  // g + 8 (c / 2) and vector nt * 8 + 2 t + c % 2.
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt)
    *reinterpret_cast<float4*>(part[warp][nt][lane]) = make_float4(acc[nt][0], acc[nt][1], acc[nt][2], acc[nt][3]);
  __syncthreads();
  for (int i = threadIdx.x; i < kNT * 128; i += kMmaThreads) {
    const int nt = i / 128, l = (i / 4) % 32, c = i % 4;
    float v = 0.f;
#pragma unroll
    for (int wi = 0; wi < kMmaWarps; ++wi) v += part[wi][nt][l][c];
    const int n = row0 + (l >> 2) + (c >> 1) * 8, b = nt * 8 + (l & 3) * 2 + (c & 1);
    if (n < p.n && b < p.batch) {
      const int64_t at = b * p.y_b + n;
      if (p.out_f32)
        static_cast<float*>(p.y)[at] = v;
      else
        static_cast<T*>(p.y)[at] = from_float<T>(v);
    }
  }
}

template <typename T, int kNT>
Status launch_gemv_mma(const CudaDevice& device, const GemvArgs& p) {
  if (p.n == 0) return Status::ok();  // no rows: nothing to launch (an empty grid is an error)
  const int64_t blocks = ceil_div(static_cast<int64_t>(p.n), static_cast<int64_t>(kMmaRows));
  gemv_mma_kernel<T, kNT><<<static_cast<unsigned>(blocks), kMmaThreads, 0, device.stream()>>>(p);
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
    if constexpr (!std::is_same_v<T, float>) {
      if (p.batch <= 8) return launch_gemv_mma<T, 1>(**device, p);
      return launch_gemv_mma<T, 2>(**device, p);
    } else {
      if (p.batch <= 1) return launch_gemv<T, 1>(**device, p);
      if (p.batch <= 2) return launch_gemv<T, 2>(**device, p);
      if (p.batch <= 4) return launch_gemv<T, 4>(**device, p);
      if (p.batch <= 8) return launch_gemv<T, 8>(**device, p);
      return launch_gemv<T, 16>(**device, p);
    }
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
