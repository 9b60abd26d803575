// CUDA quantize_blocks: x (f32, f16, bf16) -> y in a block format, bit for bit as core/dtype.cpp's
// quantize_row (docs/ops-family4.md, "quantize_blocks"; the codecs: quantize_blocks.cuh).
// Kernels:
//  - quantize_warp_kernel, contiguous 16-byte aligned x and y: each warp takes its own tiles of
//    TW blocks (32 from f32, 64 from 16-bit sources) in a grid-stride loop over the resident
//    warps, no block-wide barrier. A lane loads N = 8 16-byte pieces of x (8 values of a block a
//    piece, 4 lanes a block) before encoding any; the group's codes go to the warp's shared-memory
//    copy of the tile's output (encode_piece; E2M1 from 16-bit sources by e2m1x2_f16), which the
//    warp then writes as contiguous 16-byte streaming stores. A tile's output (TW x 34, 18, 33 or
//    17 bytes) is a whole number of 16-byte pieces, so every tile starts 16-byte aligned although
//    the blocks do not (34-byte q8_0 blocks). Bytes past the last whole piece of the last tile:
//    one a lane.
//  - quantize_rows_kernel, any other layout of x (transposed, padded): a warp per block, lane j
//    reading value j through the view's strides and writing its code(s) straight to y.
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/quantize_blocks.cuh"
#include "suites/ops/blocks_desc.h"

namespace dnnb::cuda_kernels {
namespace {

using namespace blocks;
using cast_detail::kBF16;
using cast_detail::kF16;
using cast_detail::kF32;

constexpr int kThreads = 256;

template <int S>
using SourceT = typename cast_detail::Storage<S>::type;  // uint32_t / uint16_t storage words

template <int S>
__device__ __forceinline__ float source_value(uint32_t code) {
  return as_float(cast_detail::to_f32<S>(code));
}

// A warp's tile: a lane holds 8 values of a block (G = 8, L = 4 lanes a block: one 16-byte load
// from a 16-bit source, two adjacent ones from f32), N loads a lane, so P = N / (loads a piece)
// pieces and TW = 8 P blocks; the tile's output (TW x 34, 18, 33 or 17 bytes) is whole 16-byte
// pieces.
template <int S, int F, int N>
struct WarpTiles {
  static constexpr int G = 8, L = 4;
  static constexpr int kLoads = G * static_cast<int>(sizeof(SourceT<S>)) / 16;  // a piece
  static constexpr int P = N / kLoads;
  static constexpr int TW = 32 * P / L;
  static constexpr int kTileBytes = TW * kBlockBytes<F>;
  static_assert(kTileBytes % 16 == 0, "a warp tile's output must be whole 16-byte pieces");
};

// At most 64 registers (4 blocks an SM; up to 74 unbounded), no spills.
template <int S, int F, int N, bool kCvt>
__global__ void __launch_bounds__(kThreads, 4)
    quantize_warp_kernel(const SourceT<S>* __restrict__ x, uint8_t* __restrict__ y, int64_t n_blocks) {
  using T = WarpTiles<S, F, N>;
  constexpr int G = T::G, L = T::L, P = T::P, TW = T::TW, kWarps = kThreads / 32;
  __shared__ __align__(16) uint8_t tiles[kWarps][T::kTileBytes];
  const int lane = threadIdx.x % 32, k = lane % L;
  uint8_t* tile_out = tiles[threadIdx.x / 32];
  const int64_t n_tiles = (n_blocks + TW - 1) / TW;
  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; tile < n_tiles;
       tile += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t first = tile * TW;
    const int nb = static_cast<int>(n_blocks - first < TW ? n_blocks - first : TW);
    // Piece p of the lane: values kG .. kG + G - 1 of block (32 p + lane) / L, the tile's
    // 16-byte pieces kLoads (32 p + lane) onwards.
    const auto* in = reinterpret_cast<const uint4*>(x + first * 32);
    uint4 raw[P][T::kLoads];  // every load before any encode
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int j = 0; j < T::kLoads; ++j)
        raw[p][j] = (32 * p + lane) / L < nb ? in[T::kLoads * (32 * p + lane) + j] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int p = 0; p < P; ++p) {
      SourceT<S> codes[G];
      memcpy(codes, raw[p], 16 * T::kLoads);
      uint32_t bits[G];
#pragma unroll
      for (int i = 0; i < G; ++i) bits[i] = cast_detail::to_f32<S>(codes[i]);
      // Lanes of blocks past the end encode zeros into the unused part of the tile copy.
      encode_piece<F, L, G, kCvt>(bits, k, tile_out + (32 * p + lane) / L * kBlockBytes<F>);
    }
    __syncwarp();
    uint8_t* out = y + first * kBlockBytes<F>;
    if (nb == TW) {  // every tile but the last: a fixed count of 16-byte words
#pragma unroll
      for (int i = lane; i < T::kTileBytes / 16; i += 32)
        __stcs(reinterpret_cast<uint4*>(out) + i, reinterpret_cast<const uint4*>(tile_out)[i]);
    } else {
      const int bytes = nb * kBlockBytes<F>;
      for (int i = lane; i < bytes / 16; i += 32)
        __stcs(reinterpret_cast<uint4*>(out) + i, reinterpret_cast<const uint4*>(tile_out)[i]);
      for (int i = bytes / 16 * 16 + lane; i < bytes; i += 32) out[i] = tile_out[i];
    }
    __syncwarp();  // every lane's reads of the tile copy done before the next tile's codes
  }
}

template <int S, int F>
__global__ void __launch_bounds__(kThreads)
    quantize_rows_kernel(RowView<const SourceT<S>> x, uint8_t* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t per_row = x.ri.cols / 32, n_blocks = x.ri.rows * per_row;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32; b < n_blocks; b += warps) {
    const SourceT<S>* row = x.row(b / per_row);
    const int64_t c = (b % per_row) * 32 + lane;
    const float v[1] = {source_value<S>(row[c * x.ri.col_stride])};
    const BlockHead h = block_head<32, 1>(v, lane);
    uint8_t* block = y + b * kBlockBytes<F>;
    if constexpr (F == kMxE2M1) {
      // Pairs: the even lane writes its value's and its neighbour's codes.
      const float pair[2] = {v[0], __shfl_down_sync(0xFFFFFFFFu, v[0], 1)};
      if (lane % 2 == 0) encode_lane<F, 16, 2>(pair, h, lane / 2, block);
    } else {
      encode_lane<F, 32, 1>(v, h, lane, block);
    }
  }
}


// quantize_warp_kernel<S, F, N, kCvt> on every block resident at once (none without a tile).
template <int S, int F, int N, bool kCvt>
Status launch_warp(const CudaDevice& device, const SourceT<S>* x, uint8_t* y, int64_t n_blocks) {
  const auto kernel = &quantize_warp_kernel<S, F, N, kCvt>;
  auto resident = resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, device);
  if (!resident) return resident.status();
  const int64_t tiles = ceil_div(n_blocks, int64_t{WarpTiles<S, F, N>::TW});
  const int64_t blocks = std::clamp<int64_t>(ceil_div(tiles, int64_t{kThreads / 32}), 1, *resident);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(x, y, n_blocks);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <int S, int F>
Status launch(const CudaDevice& device, const Tensor& x, const Tensor& y) {
  const int64_t n_blocks = y.numel() / 32;
  if (n_blocks == 0) return Status::ok();
  const SourceT<S>* xp = data_ptr<const SourceT<S>>(x);
  auto* yp = data_ptr<uint8_t>(y);
  if (x.is_contiguous() && y.is_contiguous() && aligned16(xp) && aligned16(yp))
    return launch_warp<S, F, 8, S != kF32 && F == kMxE2M1>(device, xp, yp, n_blocks);
  auto xv = make_row_view<const SourceT<S>>(x);
  if (!xv) return xv.status();
  const int64_t blocks = std::clamp<int64_t>(ceil_div(n_blocks, kThreads / 32), 1, int64_t{device.sm_count()} * 8);
  quantize_rows_kernel<S, F><<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(*xv, yp);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <int S>
Status launch_to(DType format, const CudaDevice& device, const Tensor& x, const Tensor& y) {
  switch (format) {
    case DType::q8_0: return launch<S, kQ8_0>(device, x, y);
    case DType::q4_0: return launch<S, kQ4_0>(device, x, y);
    case DType::mxfp8: return launch<S, kMxE4M3>(device, x, y);
    case DType::mxfp4: return launch<S, kMxE2M1>(device, x, y);
    case DType::mxfp8_e5m2: return launch<S, kMxE5M2>(device, x, y);
    default: return Status::unsupported(std::string("cuda quantize_blocks: ") + dtype_name(format) + " is not a block format");
  }
}

Status run_quantize(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("cuda quantize_blocks: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  auto target = ops::quantize_target(call.problem);
  if (!target) return target.status();
  DNNB_TRY(expect_tensor(x, call.problem.dtype, "x"));
  DNNB_TRY(expect_tensor(y, *target, "y"));
  if (x.shape != y.shape) return Status::bad_input("cuda quantize_blocks: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (!y.is_contiguous()) return Status::unsupported("cuda quantize_blocks: y " + y.describe() + " is not contiguous");
  switch (x.dtype) {
    case DType::f32: return launch_to<kF32>(y.dtype, **device, x, y);
    case DType::f16: return launch_to<kF16>(y.dtype, **device, x, y);
    case DType::bf16: return launch_to<kBF16>(y.dtype, **device, x, y);
    default: return Status::unsupported(std::string("cuda quantize_blocks: no source ") + dtype_name(x.dtype));
  }
}

DNNB_REGISTER(register_cuda("quantize_blocks", "", "", {DType::f32, DType::f16, DType::bf16}, run_quantize,
                            [](const Problem& problem) {
                              auto target = ops::quantize_target(problem);
                              return target ? Status::ok() : target.status();
                            }));

}  // namespace
}  // namespace dnnb::cuda_kernels
