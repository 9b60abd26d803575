// matmul_ggml (docs/ops-family4.md): y = x w^T with w in q8_0 or q4_0, as ggml computes it.
//
// ggml_quantize_x: one warp per 32-value block of x (lane l holds value l), quantised as
// core's quantize_row (ggml's quantize_row_q8_0_ref): amax by a warp max, d = amax / 127 and
// id = 1 / d in IEEE f32 division (this file is not built with fast math), q = roundf(x id)
// (half away from zero) clamped to +-127 (NaN -> 0, only where id is Inf), d rounded to f16
// (__float2half_rn); a block with a NaN or an Inf gets a NaN d and q = 0. Into stream-ordered
// scratch: the 32 quants (32 bytes a block, 16-byte aligned), d decoded to f32 and sum(q).
//
// ggml_matvec: a warp per row of w, a tile of up to MT rows of x per launch row (M <= 8 is one
// tile: w is streamed once; larger M runs the same kernel per tile of 16 rows). w's blocks are
// 34 (q8_0) or 18 (q4_0) bytes, only 2-byte aligned, so the warp reads the bytes of 32 blocks at
// a time with 16-byte loads (ld.global.nc.L1::no_allocate, aligned down to 16 bytes: the bytes
// read before or after a row lie in the same 16-byte chunk as a byte of w) into its shared
// memory (the next 32 blocks' loads in flight meanwhile), then lane l takes block l of them: 8 x 4 quant bytes (q4_0: the codes q + 8, low
// nibbles for elements 0..15 and high nibbles for 16..31), __dp4a against x's quants (exact
// int32; q4_0 minus 8 sum(q_x)), and acc += float(sumi) x (d_w x d_x) by an FMA (d_w x d_x, a
// product of two f16 values, is exact in f32). The lanes' sums are added by a butterfly at the
// end: the block terms are summed in f32 in another order than ggml's, within the dot_product
// bound over K / 32 terms.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/matmul_ggml_desc.h"

namespace dnnb::cuda_kernels {
namespace {

constexpr int kWarps = 8;                  // warps per block, each one row of w at a time
constexpr int kGroup = 32;                 // blocks of w per warp step: one per lane
constexpr int kStageVecs = (kGroup * 34 + 15) / 16 + 1;  // 16-byte chunks covering 32 q8_0 blocks

struct QuantArgs {
  const void* x;
  int64_t x_row, x_col;  // strides in elements
  int64_t rows;
  int nb;
  int8_t* xq;     // rows x nb x 32
  float* xd;      // rows x nb
  int* xs;        // rows x nb
};

template <typename T>
__global__ void __launch_bounds__(256) ggml_quantize_x(const QuantArgs a) {
  const int lane = threadIdx.x & 31;
  const int64_t block = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + (threadIdx.x >> 5);
  if (block >= a.rows * a.nb) return;  // whole warps leave together
  const int64_t i = block / a.nb;
  const int b = static_cast<int>(block % a.nb);
  const T* src = static_cast<const T*>(a.x) + i * a.x_row + (static_cast<int64_t>(b) * 32 + lane) * a.x_col;
  const float v = to_float(*src);
  const bool finite = __all_sync(0xffffffffu, isfinite(v));
  float amax = fabsf(v);
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, s));
  int q = 0;
  float d_value = __int_as_float(0x7fc00000);  // the decoded f16 NaN of a non-finite block
  if (finite) {
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float r = roundf(__fmul_rn(v, id));
    q = isnan(r) ? 0 : static_cast<int>(fminf(fmaxf(r, -127.0f), 127.0f));
    d_value = __half2float(__float2half_rn(d));
  }
  a.xq[block * 32 + lane] = static_cast<int8_t>(q);
  int sum = q;
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
  if (lane == 0) {
    a.xd[block] = d_value;
    a.xs[block] = sum;
  }
}

struct MatvecArgs {
  const unsigned char* w;
  int64_t w_row_bytes;
  int n, nb;
  const int8_t* xq;
  const float* xd;
  const int* xs;
  int64_t m;
  float* y;
  int64_t y_row;
};

// 16 bytes read once (w): through the non-coherent path without allocating in L1.
__device__ __forceinline__ uint4 load_stream16(const void* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

template <int MT, bool kQ8>
__global__ void __launch_bounds__(kWarps * 32) ggml_matvec(const MatvecArgs p) {
  constexpr int kBlockBytes = kQ8 ? 34 : 18;
  __shared__ __align__(16) uint4 stage[kWarps][kStageVecs];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row = blockIdx.x * kWarps + warp;
  if (row >= p.n) return;  // no block-wide barrier below: a warp may leave alone
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * MT;
  const int mt = static_cast<int>(min(static_cast<int64_t>(MT), p.m - m0));
  const unsigned char* w_row = p.w + static_cast<int64_t>(row) * p.w_row_bytes;
  const unsigned char* staged = reinterpret_cast<const unsigned char*>(stage[warp]);
  float acc[MT];
#pragma unroll
  for (int v = 0; v < MT; ++v) acc[v] = 0.0f;

  // The bytes of step b0's 32 blocks, 16-byte aligned: `first` and the chunk count.
  auto span = [&](int b0, uintptr_t& start, uintptr_t& first) {
    const int count = min(kGroup, p.nb - b0);
    start = reinterpret_cast<uintptr_t>(w_row + static_cast<int64_t>(b0) * kBlockBytes);
    first = start & ~uintptr_t{15};
    return static_cast<int>((start + static_cast<uintptr_t>(count) * kBlockBytes - first + 15) >> 4);
  };
  // Each step's loads are issued before the previous step's blocks are used: one step of w in
  // flight per warp while it computes (lane l holds chunks l, l + 32, l + 64).
  constexpr int kPerLane = (kStageVecs + 31) / 32;
  uint4 next[kPerLane];
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) next[c] = make_uint4(0, 0, 0, 0);
  uintptr_t next_start = 0, next_first = 0;
  int next_vecs = span(0, next_start, next_first);
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int v = lane + 32 * c;
    if (v < next_vecs) next[c] = load_stream16(reinterpret_cast<const void*>(next_first + 16 * static_cast<uintptr_t>(v)));
  }
  for (int b0 = 0; b0 < p.nb; b0 += kGroup) {
    const int count = min(kGroup, p.nb - b0);
    const uintptr_t start = next_start, first = next_first;
#pragma unroll
    for (int c = 0; c < kPerLane; ++c)
      if (lane + 32 * c < next_vecs) stage[warp][lane + 32 * c] = next[c];
    __syncwarp();
    if (b0 + kGroup < p.nb) {
      next_vecs = span(b0 + kGroup, next_start, next_first);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int v = lane + 32 * c;
        if (v < next_vecs)
          next[c] = load_stream16(reinterpret_cast<const void*>(next_first + 16 * static_cast<uintptr_t>(v)));
      }
    }
    if (lane < count) {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(staged + (start - first) + lane * kBlockBytes);
      const float dw = __half2float(__ushort_as_half(h[0]));
      int wq[8];
      if constexpr (kQ8) {
#pragma unroll
        for (int t = 0; t < 8; ++t) wq[t] = static_cast<int>(h[1 + 2 * t] | (static_cast<uint32_t>(h[2 + 2 * t]) << 16));
      } else {
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          const uint32_t packed = h[1 + 2 * t] | (static_cast<uint32_t>(h[2 + 2 * t]) << 16);
          wq[t] = static_cast<int>(packed & 0x0f0f0f0fu);             // elements 4t .. 4t + 3
          wq[t + 4] = static_cast<int>((packed >> 4) & 0x0f0f0f0fu);  // elements 16 + 4t ..
        }
      }
      const int b = b0 + lane;
#pragma unroll
      for (int v = 0; v < MT; ++v) {
        if (v < mt) {
          const int64_t xb = (m0 + v) * p.nb + b;
          const int4* xq = reinterpret_cast<const int4*>(p.xq + xb * 32);
          const int4 x0 = __ldg(xq), x1 = __ldg(xq + 1);
          int s = __dp4a(wq[0], x0.x, 0);
          s = __dp4a(wq[1], x0.y, s);
          s = __dp4a(wq[2], x0.z, s);
          s = __dp4a(wq[3], x0.w, s);
          s = __dp4a(wq[4], x1.x, s);
          s = __dp4a(wq[5], x1.y, s);
          s = __dp4a(wq[6], x1.z, s);
          s = __dp4a(wq[7], x1.w, s);
          if constexpr (!kQ8) s -= 8 * __ldg(p.xs + xb);  // codes are q + 8
          acc[v] = fmaf(static_cast<float>(s), dw * __ldg(p.xd + xb), acc[v]);
        }
      }
    }
    __syncwarp();  // the stage is refilled next step
  }
#pragma unroll
  for (int v = 0; v < MT; ++v) {
    float s = acc[v];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0 && v < mt) p.y[(m0 + v) * p.y_row + row] = s;
  }
}

template <int MT, bool kQ8>
Status launch_matvec(const CudaDevice& device, const MatvecArgs& p) {
  const dim3 grid(static_cast<unsigned>(ceil_div(p.n, kWarps)), static_cast<unsigned>(ceil_div(p.m, MT)));
  ggml_matvec<MT, kQ8><<<grid, kWarps * 32, 0, device.stream()>>>(p);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <bool kQ8>
Status launch_for_rows(const CudaDevice& device, const MatvecArgs& p) {
  switch (p.m) {
    case 1: return launch_matvec<1, kQ8>(device, p);
    case 2: return launch_matvec<2, kQ8>(device, p);
    case 3: return launch_matvec<3, kQ8>(device, p);
    case 4: return launch_matvec<4, kQ8>(device, p);
    case 5:
    case 6: return launch_matvec<6, kQ8>(device, p);
    case 7:
    case 8: return launch_matvec<8, kQ8>(device, p);
    default: return launch_matvec<16, kQ8>(device, p);
  }
}

Status run_matmul_ggml(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::matmul_ggml_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input("cuda matmul_ggml: expected inputs w, x and output y");
  const Tensor& w = call.inputs[0];
  const Tensor& x = call.inputs[1];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(w, d->w, "w"));
  DNNB_TRY(expect_tensor(y, DType::f32, "y"));
  if (w.shape != Shape{d->n, d->k} || x.shape != Shape{d->m, d->k} || y.shape != Shape{d->m, d->n})
    return Status::bad_input("cuda matmul_ggml: operands " + w.describe() + ", " + x.describe() + ", " + y.describe() +
                             " do not match " + call.problem.to_string());
  if (w.strides[1] != 1 || y.strides[1] != 1)
    return Status::unsupported("cuda matmul_ggml: w's or y's columns are not unit-stride");
  if (d->n > INT32_MAX || d->blocks() > INT32_MAX) return Status::unsupported("cuda matmul_ggml: dims beyond 2^31 - 1");
  const int64_t blocks = d->m * d->blocks();
  // Scratch: quants (32 bytes a block) first, so every block's are 16-byte aligned, then d, then sum(q).
  auto scratch = StreamScratch::allocate(**device, static_cast<size_t>(blocks) * (32 + sizeof(float) + sizeof(int)));
  if (!scratch) return scratch.status();
  auto* xq = scratch->as<int8_t>();
  auto* xd = reinterpret_cast<float*>(xq + blocks * 32);
  auto* xs = reinterpret_cast<int*>(xd + blocks);

  QuantArgs qa{data_ptr<unsigned char>(x), x.strides[0], x.strides[1], d->m, static_cast<int>(d->blocks()), xq, xd, xs};
  const unsigned q_grid = static_cast<unsigned>(ceil_div(blocks, 8));
  Status quantized = dispatch_float(x.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    ggml_quantize_x<T><<<q_grid, 256, 0, (*device)->stream()>>>(qa);
    DNNB_CUDA_CHECK_LAUNCH();
    return Status::ok();
  });
  if (!quantized.is_ok()) return quantized;

  MatvecArgs p{};
  p.w = data_ptr<unsigned char>(w);
  p.w_row_bytes = static_cast<int64_t>(storage_bytes(w.dtype, w.strides[0]));
  p.n = static_cast<int>(d->n);
  p.nb = static_cast<int>(d->blocks());
  p.xq = xq;
  p.xd = xd;
  p.xs = xs;
  p.m = d->m;
  p.y = data_ptr<float>(y);
  p.y_row = y.strides[0];
  DNNB_TRY(d->w == DType::q8_0 ? launch_for_rows<true>(**device, p) : launch_for_rows<false>(**device, p));
  return scratch->release();
}

DNNB_REGISTER(register_cuda("matmul_ggml", "", "", {DType::q8_0, DType::q4_0}, run_matmul_ggml));

}  // namespace
}  // namespace dnnb::cuda_kernels
