// CUDA quantize_linear and dequantize_linear (docs/ops-family4.md, "quantize_linear and
// dequantize_linear"), bit for bit suites/ops/qlinear_desc.h's rules:
//   quantize:   v = rintf(__fmul_rn(x, __frcp_rn(scale))) (the IEEE reciprocal, one f32 multiply,
//               cvt.rni: ties to even), clamped by fmaxf/fminf to [qmin - zp, qmax - zp] (fmaxf
//               returns the other operand for NaN: qmin), then the exact integer + zp, its low byte.
//   dequantize: __fmul_rn(__int2float_rn(q - zp), scale) (the difference exact, one multiply).
// The __*_rn intrinsics keep every step one IEEE operation whatever nvcc contracts.
//
// Kernels, for contiguous 16-byte aligned x and y:
//  - quantize, qlinear_flat_kernel (the layout of kernels/cuda/cast.cuh's flat body, 90-96% of
//    copy): a step is 16 elements, four 16-byte loads of x and one 16-byte store of y.
//    Neighbouring lanes take neighbouring steps; blocks of 256 threads take 256 consecutive steps
//    an iteration, in a grid-stride loop over the blocks resident at once. The n % 16 elements
//    past the last whole step: block 0, one a thread.
//  - dequantize, dequantize_wide_kernel: a warp step is 512 elements. Each lane loads 16 bytes of
//    x (one 512-byte load a warp), kWideSteps warp steps loaded before any is converted; each step
//    goes through 512 bytes of the warp's shared memory (one 16-byte store a lane), from which
//    lane l reads the 4 bytes 128 j + 4 l for its store j (0..3): four float4 stores a lane,
//    each of them 512 contiguous bytes a warp (whole lines; four float4 a lane 64 bytes apart
//    leave every warp-wide store a quarter of each line). The n % 512 elements past the last
//    warp step: block 0, one a thread.
// Parameters: per tensor read once per thread. Per channel (element i in channel
// (i / inner) % channels, by multiply-shift division when every index fits 32 bits), when
// inner is a multiple of 4 (quantize: 16) a store's elements lie in one channel, which is found
// once per store (the scale and zero point arrays stay in L1); else each element finds its own.
//  - qlinear_rows_kernel, any other layout (or misaligned views): a block's threads along the
//    columns of its rows, element by element; element (r, c) is logical element r * cols + c.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "kernels/cuda/copy_common.cuh"
#include "kernels/cuda/cuda_common.cuh"
#include "suites/ops/qlinear_desc.h"

namespace dnnb::cuda_kernels::qlinear_detail {

inline constexpr int kThreads = 256;
inline constexpr int kQuantizeStep = 16;  // elements a thread step of qlinear_flat_kernel
inline constexpr int kWideSteps = 4;  // warp steps of x a warp loads before converting any

template <bool kQuantize, bool kSigned>
struct Traits {
  using Int = std::conditional_t<kSigned, int8_t, uint8_t>;
  using Src = std::conditional_t<kQuantize, float, Int>;
  using Dst = std::conditional_t<kQuantize, Int, float>;
  static constexpr int kQmin = kSigned ? -128 : 0, kQmax = kSigned ? 127 : 255;
};

// What a channel contributes: the factor (1 / scale or scale), the zero point, quantize's bounds.
struct Channel {
  float factor, lo, hi;
  int zp;
};

template <bool kQuantize, bool kSigned>
__device__ __forceinline__ Channel channel_params(const float* __restrict__ scale, const int* __restrict__ zero_point,
                                                  int64_t c) {
  using T = Traits<kQuantize, kSigned>;
  Channel ch;
  const float s = __ldg(scale + c);
  ch.zp = __ldg(zero_point + c);
  ch.factor = kQuantize ? __frcp_rn(s) : s;
  ch.lo = static_cast<float>(T::kQmin - ch.zp);
  ch.hi = static_cast<float>(T::kQmax - ch.zp);
  return ch;
}

__device__ __forceinline__ uint32_t quantize_one(float x, const Channel& ch) {
  float v = rintf(__fmul_rn(x, ch.factor));
  v = fminf(fmaxf(v, ch.lo), ch.hi);
  return static_cast<uint32_t>(__float2int_rz(v) + ch.zp) & 0xFFu;
}

template <bool kSigned>
__device__ __forceinline__ float dequantize_one(uint32_t byte, const Channel& ch) {
  const int q = kSigned ? static_cast<int>(static_cast<int8_t>(byte)) : static_cast<int>(byte);
  return __fmul_rn(__int2float_rn(q - ch.zp), ch.factor);
}

// Where the channel changes: per tensor none, per channel every `inner` elements of `channels`.
struct Layout {
  int64_t inner = 1, channels = 1;
  bool per_channel = false;
  bool step_in_one_channel = true;  // inner % kQuantizeStep == 0 (quantize_linear's flat kernel)
  bool narrow = true;               // every index fits 32 bits: multiply-shift divisions
  layout::FastDivmod inner_div, channels_div;  // by inner and channels, when narrow
  __device__ __forceinline__ int64_t channel_of(int64_t i) const {
    if (!per_channel) return 0;
    if (narrow) {
      const uint32_t q = inner_div.div(static_cast<uint32_t>(i));
      uint32_t c;
      channels_div.divmod(q, c);
      return c;
    }
    return (i / inner) % channels;
  }
};

template <bool kSigned>
__global__ void __launch_bounds__(kThreads)
    qlinear_flat_kernel(const float* __restrict__ x, uint8_t* __restrict__ y, int64_t n, const float* __restrict__ scale,
                        const int* __restrict__ zero_point, Layout layout) {
  const int64_t steps = n / kQuantizeStep;
  const Channel tensor_ch = channel_params<true, kSigned>(scale, zero_point, 0);
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; s < steps;
       s += static_cast<int64_t>(gridDim.x) * kThreads) {
    uint32_t words[kQuantizeStep];  // the step's four loads before any conversion
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(x) + s * 4 + q);
      words[4 * q] = v.x, words[4 * q + 1] = v.y, words[4 * q + 2] = v.z, words[4 * q + 3] = v.w;
    }
    Channel ch = tensor_ch;
    if (layout.per_channel && layout.step_in_one_channel)
      ch = channel_params<true, kSigned>(scale, zero_point, layout.channel_of(s * kQuantizeStep));
    uint32_t rw[4];  // the step's 16 bytes of y (fully unrolled: registers)
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t packed = 0;
#pragma unroll
      for (int b = 0; b < 4; ++b) {
        const int e = 4 * w + b;
        if (layout.per_channel && !layout.step_in_one_channel)
          ch = channel_params<true, kSigned>(scale, zero_point, layout.channel_of(s * kQuantizeStep + e));
        packed |= quantize_one(__uint_as_float(words[e]), ch) << (8 * b);
      }
      rw[w] = packed;
    }
    reinterpret_cast<uint4*>(y)[s] = make_uint4(rw[0], rw[1], rw[2], rw[3]);
  }
  if (blockIdx.x == 0)  // the n % 16 elements after the last whole step
    for (int64_t i = steps * kQuantizeStep + threadIdx.x; i < n; i += kThreads)
      y[i] = static_cast<uint8_t>(quantize_one(x[i], channel_params<true, kSigned>(scale, zero_point, layout.channel_of(i))));
}

// Channel modes of the dequantize kernel: per tensor, one channel a store (inner % 4 == 0), one
// an element.
enum ChannelMode : int { kPerTensor, kPerStore, kPerElement };

template <bool kSigned, int kMode, int kSteps>
__global__ void __launch_bounds__(kThreads)
    dequantize_wide_kernel(const uint8_t* __restrict__ x, float* __restrict__ y, int64_t n,
                           const float* __restrict__ scale, const int* __restrict__ zero_point, Layout layout) {
  constexpr int kWarps = kThreads / 32;
  __shared__ __align__(16) uint32_t stage[kWarps][128];  // a warp step's 512 bytes of x, per warp
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint32_t* my = stage[warp];
  const int64_t warp_steps = n / 512;
  constexpr int64_t kPerIteration = int64_t{kWarps} * kSteps;  // warp steps a block iteration
  const Channel tensor_ch = channel_params<false, kSigned>(scale, zero_point, 0);
  for (int64_t first = blockIdx.x * kPerIteration; first < warp_steps; first += gridDim.x * kPerIteration) {
    uint4 raw[kSteps];  // every step's load before any store
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const int64_t ws = first + u * kWarps + warp;  // warp-uniform
      if (ws < warp_steps) raw[u] = __ldg(reinterpret_cast<const uint4*>(x + ws * 512) + lane);
    }
#pragma unroll
    for (int u = 0; u < kSteps; ++u) {
      const int64_t ws = first + u * kWarps + warp;
      if (ws >= warp_steps) break;  // warp-uniform, and every later step is past the end too
      reinterpret_cast<uint4*>(my)[lane] = raw[u];
      __syncwarp();
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t word = my[32 * j + lane];
        const int64_t e0 = ws * 512 + 128 * j + 4 * lane;
        Channel ch = tensor_ch;
        if constexpr (kMode == kPerStore) ch = channel_params<false, kSigned>(scale, zero_point, layout.channel_of(e0));
        float v[4];
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          if constexpr (kMode == kPerElement)
            ch = channel_params<false, kSigned>(scale, zero_point, layout.channel_of(e0 + b));
          v[b] = dequantize_one<kSigned>((word >> (8 * b)) & 0xFFu, ch);
        }
        reinterpret_cast<float4*>(y + e0)[0] = make_float4(v[0], v[1], v[2], v[3]);
      }
      __syncwarp();  // every lane's reads of the stage done before the next step's store
    }
  }
  if (blockIdx.x == 0)  // the n % 512 elements after the last whole warp step
    for (int64_t i = warp_steps * 512 + threadIdx.x; i < n; i += kThreads) {
      const Channel ch = kMode == kPerTensor ? tensor_ch : channel_params<false, kSigned>(scale, zero_point, layout.channel_of(i));
      y[i] = dequantize_one<kSigned>(x[i], ch);
    }
}

template <bool kQuantize, bool kSigned>
__global__ void __launch_bounds__(kThreads)
    qlinear_rows_kernel(RowView<const typename Traits<kQuantize, kSigned>::Src> x,
                        typename Traits<kQuantize, kSigned>::Dst* __restrict__ y, const float* __restrict__ scale,
                        const int* __restrict__ zero_point, Layout layout) {
  const int64_t rows = x.ri.rows, cols = x.ri.cols;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const auto* xr = x.row(r);
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * kThreads) {
      const int64_t i = r * cols + c;
      const Channel ch = channel_params<kQuantize, kSigned>(scale, zero_point, layout.channel_of(i));
      const auto v = xr[c * x.ri.col_stride];
      if constexpr (kQuantize)
        y[i] = static_cast<typename Traits<kQuantize, kSigned>::Dst>(quantize_one(v, ch));
      else
        y[i] = dequantize_one<kSigned>(static_cast<uint8_t>(v), ch);
    }
  }
}


// dequantize_wide_kernel<kSigned, kMode, kSteps> on every block resident at once (none without
// an iteration of work).
template <bool kSigned, int kMode, int kSteps>
Status launch_wide(const CudaDevice& device, const uint8_t* x, float* y, int64_t n, const float* scale,
                   const int* zero_point, const Layout& layout) {
  const auto kernel = &dequantize_wide_kernel<kSigned, kMode, kSteps>;
  auto resident = resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, device);
  if (!resident) return resident.status();
  const int64_t blocks = std::clamp<int64_t>(ceil_div(n / 512, int64_t{kThreads / 32} * kSteps), 1, *resident);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(x, y, n, scale, zero_point, layout);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <bool kSigned, int kSteps>
Status launch_wide(const CudaDevice& device, const uint8_t* x, float* y, int64_t n, const float* scale,
                   const int* zero_point, const Layout& layout) {
  if (!layout.per_channel) return launch_wide<kSigned, kPerTensor, kSteps>(device, x, y, n, scale, zero_point, layout);
  if (layout.inner % 4 == 0) return launch_wide<kSigned, kPerStore, kSteps>(device, x, y, n, scale, zero_point, layout);
  return launch_wide<kSigned, kPerElement, kSteps>(device, x, y, n, scale, zero_point, layout);
}

template <bool kQuantize, bool kSigned>
Status launch(const CudaDevice& device, const Tensor& x, const Tensor& y, const Tensor& scale, const Tensor& zero_point,
              const ops::QlinearDesc& d) {
  using T = Traits<kQuantize, kSigned>;
  const int64_t n = y.numel();
  if (n == 0) return Status::ok();
  Layout layout;
  layout.per_channel = d.per_channel();
  layout.inner = d.inner;
  layout.channels = d.channels;
  layout.step_in_one_channel = d.inner % kQuantizeStep == 0;  // quantize's; the wide kernel tests inner % 4
  layout.narrow = n <= int64_t{UINT32_MAX};
  if (layout.narrow) {
    layout.inner_div = layout::FastDivmod::of(static_cast<uint32_t>(d.inner));
    layout.channels_div = layout::FastDivmod::of(static_cast<uint32_t>(d.channels));
  }
  const auto* xp = data_ptr<const typename T::Src>(x);
  auto* yp = data_ptr<typename T::Dst>(y);
  const float* sp = data_ptr<const float>(scale);
  const int* zp = data_ptr<const int>(zero_point);
  if (x.is_contiguous() && aligned16(xp) && aligned16(yp)) {
    if constexpr (kQuantize) {
      const auto kernel = &qlinear_flat_kernel<kSigned>;
      auto resident = resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, device);
      if (!resident) return resident.status();
      // Every block resident at once (no second wave), none without a step.
      const int64_t blocks = std::clamp<int64_t>(ceil_div(n / kQuantizeStep, int64_t{kThreads}), 1, *resident);
      kernel<<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(xp, reinterpret_cast<uint8_t*>(yp), n, sp, zp,
                                                                              layout);
      DNNB_CUDA_CHECK_LAUNCH();
      return Status::ok();
    } else {
      return launch_wide<kSigned, kWideSteps>(device, reinterpret_cast<const uint8_t*>(xp), yp, n, sp, zp, layout);
    }
  }
  auto xv = make_row_view<const typename T::Src>(x);
  if (!xv) return xv.status();
  const int64_t max_blocks = static_cast<int64_t>(device.sm_count()) * 8;
  const int64_t col_blocks = std::min<int64_t>(ceil_div(xv->ri.cols, kThreads), max_blocks);
  const int64_t row_blocks = std::min<int64_t>({xv->ri.rows, 65535, std::max<int64_t>(1, max_blocks * 4 / col_blocks)});
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(row_blocks));
  qlinear_rows_kernel<kQuantize, kSigned><<<grid, kThreads, 0, device.stream()>>>(*xv, yp, sp, zp, layout);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// The checks both ops make, then launch<kQuantize, signed or not>.
template <bool kQuantize>
Status run(OpCall& call) {
  const char* op = kQuantize ? "cuda quantize_linear" : "cuda dequantize_linear";
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 3 || call.outputs.size() != 1)
    return Status::bad_input(std::string(op) + ": expects inputs x, scale, zero_point and output y");
  auto d = ops::qlinear_desc(call.problem, kQuantize);
  if (!d) return d.status();
  const Tensor& x = call.inputs[0];
  const Tensor& scale = call.inputs[1];
  const Tensor& zero_point = call.inputs[2];
  const Tensor& y = call.outputs[0];
  DNNB_TRY(expect_tensor(x, kQuantize ? DType::f32 : d->qtype, "x"));
  DNNB_TRY(expect_tensor(y, kQuantize ? d->qtype : DType::f32, "y"));
  DNNB_TRY(expect_tensor(scale, DType::f32, "scale"));
  DNNB_TRY(expect_tensor(zero_point, DType::i32, "zero_point"));
  if (scale.numel() != d->channels || zero_point.numel() != d->channels || !scale.is_contiguous() ||
      !zero_point.is_contiguous())
    return Status::bad_input(std::string(op) + ": scale and zero_point must be contiguous with " +
                             std::to_string(d->channels) + " elements");
  if (x.shape != y.shape || !y.is_contiguous())
    return Status::bad_input(std::string(op) + ": y must be contiguous with x's shape (x " + x.describe() + ", y " +
                             y.describe() + ")");
  if (d->qtype == DType::i8) return launch<kQuantize, true>(**device, x, y, scale, zero_point, *d);
  return launch<kQuantize, false>(**device, x, y, scale, zero_point, *d);
}

}  // namespace dnnb::cuda_kernels::qlinear_detail
