// CUDA dequantize_blocks: x in a block format -> y (f32, f16, bf16), each value decoded exactly
// (quantize_blocks.cuh's decode_value / decode_piece) and rounded once to y's dtype by cast.cuh's
// encoders (docs/ops-family4.md, "dequantize_blocks").
// Kernels:
//  - dequantize_warp_kernel, x and y 16-byte aligned: each warp takes its own tiles of TW blocks
//    (32 to f32, 64 to 16-bit outputs) in a grid-stride loop over the resident warps, no
//    block-wide barrier. The tile's input (TW x 34, 18, 33 or 17 bytes: whole 16-byte pieces, so
//    every tile starts aligned although the blocks do not) is loaded with 16-byte loads, all of
//    them before any lands in the warp's shared memory; then each lane decodes G values (4 to f32,
//    8 to 16-bit) of a block from aligned words of the copy (MX elements from a table of element
//    values the block fills once; bf16 rounded by bf16x2_rn) and writes them with one 16-byte
//    streaming store, neighbouring lanes neighbouring pieces of y, P = 8 pieces a lane a tile.
//  - dequantize_blocks_kernel otherwise (padded rows of x, unaligned views): a warp per block,
//    lane j writing value j.
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

template <int D>
using TargetT = typename cast_detail::Storage<D>::type;

template <int D>
__device__ __forceinline__ TargetT<D> target_code(float v) {
  return static_cast<TargetT<D>>(cast_detail::from_f32<D>(as_bits(v)));
}

// A warp's tile: P 16-byte pieces of y a lane, TW = 32 P / L blocks, whose input (TW x 34, 18,
// 33 or 17 bytes) is whole 16-byte pieces, loaded kLoads a lane.
template <int D, int F, int P>
struct WarpTiles {
  static constexpr int G = 16 / static_cast<int>(sizeof(TargetT<D>));
  static constexpr int L = 32 / G;
  static constexpr int TW = 32 * P / L;
  static constexpr int kTileBytes = TW * kBlockBytes<F>;
  static constexpr int kLoads = (kTileBytes / 16 + 31) / 32;
  static_assert(kTileBytes % 16 == 0, "a warp tile's input must be whole 16-byte pieces");
};

// Two f32 to bf16 (lo in bits 0-15) as target_code<kBF16> gives them: cvt.rn.bf16x2.f32 (round
// to nearest even, subnormals kept, overflow to Inf), then each NaN half (above 0x7F80 in
// magnitude, whatever NaN the instruction gives) replaced by the quiet NaN 0x7FC0 with the f32's
// sign. About 4.5 instructions a value for the integer encoder's 7.5.
__device__ __forceinline__ uint32_t bf16x2_rn(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  const uint32_t nan = ((r & 0x7FFF7FFFu) + 0x007F007Fu) & 0x80008000u;  // bit 15 of each NaN half
  const uint32_t mask = (nan >> 15) * 0xFFFFu;
  const uint32_t quiet = (__byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632u) & 0x80008000u) | 0x7FC07FC0u;
  return (r & ~mask) | (quiet & mask);
}

// At most 64 registers (4 blocks an SM; ptxas takes up to 80 for 16-bit outputs unbounded), no
// spills.
template <int F, int D, int P, bool kCvt>
__global__ void __launch_bounds__(kThreads, 4)
    dequantize_warp_kernel(const uint8_t* __restrict__ x, TargetT<D>* __restrict__ y, int64_t n_blocks) {
  using T = WarpTiles<D, F, P>;
  constexpr int G = T::G, L = T::L, TW = T::TW, kWarps = kThreads / 32;
  // 16 bytes past each tile: load_bytes reads a word beyond the bytes it returns.
  __shared__ __align__(16) uint8_t tiles[kWarps][T::kTileBytes + 16];
  // MX: every element code's value, one table for the block (a load instead of a decode).
  __shared__ uint32_t table[F == kQ8_0 || F == kQ4_0 ? 1 : kElementCodes<F>];
  if constexpr (F != kQ8_0 && F != kQ4_0) {
    for (int c = threadIdx.x; c < kElementCodes<F>; c += kThreads) table[c] = as_bits(element_value<F>(c));
    __syncthreads();
  }
  const int lane = threadIdx.x % 32, k = lane % L;
  uint8_t* tile_in = tiles[threadIdx.x / 32];
  const int64_t n_tiles = (n_blocks + TW - 1) / TW;
  for (int64_t tile = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; tile < n_tiles;
       tile += static_cast<int64_t>(gridDim.x) * kWarps) {
    const int64_t first = tile * TW;
    const int nb = static_cast<int>(n_blocks - first < TW ? n_blocks - first : TW);
    const int bytes = nb * kBlockBytes<F>;
    const uint8_t* in = x + first * kBlockBytes<F>;
    uint4 raw[T::kLoads];  // every load before any store to the tile copy
#pragma unroll
    for (int r = 0; r < T::kLoads; ++r)
      if (32 * r + lane < bytes / 16) raw[r] = __ldcs(reinterpret_cast<const uint4*>(in) + 32 * r + lane);
#pragma unroll
    for (int r = 0; r < T::kLoads; ++r)
      if (32 * r + lane < bytes / 16) reinterpret_cast<uint4*>(tile_in)[32 * r + lane] = raw[r];
    for (int i = bytes / 16 * 16 + lane; i < bytes; i += 32) tile_in[i] = in[i];
    __syncwarp();
    TargetT<D>* y_tile = y + first * 32;
    // Piece p: values kG .. kG + G - 1 of block (32 p + lane) / L, one 16-byte store.
    const auto piece = [&](int p) {
      const int blk = (32 * p + lane) / L;
      float v[G];
      decode_piece<F, G>(tile_in, blk * kBlockBytes<F>, k, table, v);
      uint4 bits;
      if constexpr (kCvt && D == kBF16) {
        bits = make_uint4(bf16x2_rn(v[0], v[1]), bf16x2_rn(v[2], v[3]), bf16x2_rn(v[4], v[5]), bf16x2_rn(v[6], v[7]));
      } else {
        TargetT<D> codes[G];
#pragma unroll
        for (int i = 0; i < G; ++i) codes[i] = target_code<D>(v[i]);
        memcpy(&bits, codes, 16);
      }
      __stcs(reinterpret_cast<uint4*>(y_tile) + 32 * p + lane, bits);
    };
    if (nb == TW) {  // every tile but the last: no test a piece
#pragma unroll
      for (int p = 0; p < P; ++p) piece(p);
    } else {
#pragma unroll
      for (int p = 0; p < P; ++p)
        if ((32 * p + lane) / L < nb) piece(p);
    }
    __syncwarp();  // every lane's reads of the tile copy done before the next tile's loads land
  }
}

// x's rows (ri, in values: row starts are whole blocks) may be padded; y is contiguous.
template <int F, int D>
__global__ void __launch_bounds__(kThreads)
    dequantize_blocks_kernel(const uint8_t* __restrict__ x, RowIndex ri, TargetT<D>* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int64_t per_row = ri.cols / 32, n_blocks = ri.rows * per_row;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32; b < n_blocks; b += warps) {
    const uint8_t* block = x + (ri.row_offset(b / per_row) / 32 + b % per_row) * kBlockBytes<F>;
    y[b * 32 + lane] = target_code<D>(decode_value<F>(block, lane));
  }
}


// dequantize_warp_kernel<F, D, P, kCvt> on every block resident at once (none without a tile).
template <int F, int D, int P, bool kCvt>
Status launch_warp(const CudaDevice& device, const uint8_t* x, TargetT<D>* y, int64_t n_blocks) {
  const auto kernel = &dequantize_warp_kernel<F, D, P, kCvt>;
  auto resident = resident_blocks(reinterpret_cast<const void*>(kernel), kThreads, device);
  if (!resident) return resident.status();
  const int64_t tiles = ceil_div(n_blocks, int64_t{WarpTiles<D, F, P>::TW});
  const int64_t blocks = std::clamp<int64_t>(ceil_div(tiles, int64_t{kThreads / 32}), 1, *resident);
  kernel<<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(x, y, n_blocks);
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <int F, int D>
Status launch(const CudaDevice& device, const Tensor& x, const Tensor& y) {
  const int64_t n_blocks = y.numel() / 32;
  if (n_blocks == 0) return Status::ok();
  const auto* xp = data_ptr<const uint8_t>(x);
  auto* yp = data_ptr<TargetT<D>>(y);
  if (x.is_contiguous() && aligned16(xp) && aligned16(yp)) {
    return launch_warp<F, D, 8, D == kBF16>(device, xp, yp, n_blocks);
  } else {
    auto ri = row_index(x);
    if (!ri) return ri.status();
    const int64_t blocks = std::clamp<int64_t>(ceil_div(n_blocks, kThreads / 32), 1, int64_t{device.sm_count()} * 8);
    dequantize_blocks_kernel<F, D><<<static_cast<unsigned>(blocks), kThreads, 0, device.stream()>>>(xp, *ri, yp);
  }
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

template <int F>
Status launch_to(DType target, const CudaDevice& device, const Tensor& x, const Tensor& y) {
  switch (target) {
    case DType::f32: return launch<F, kF32>(device, x, y);
    case DType::f16: return launch<F, kF16>(device, x, y);
    case DType::bf16: return launch<F, kBF16>(device, x, y);
    default: return Status::unsupported(std::string("cuda dequantize_blocks: no target ") + dtype_name(target));
  }
}

Status run_dequantize(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != 1 || call.outputs.size() != 1)
    return Status::bad_input("cuda dequantize_blocks: expects one input (x) and one output (y)");
  const Tensor& x = call.inputs[0];
  const Tensor& y = call.outputs[0];
  auto target = ops::dequantize_target(call.problem);
  if (!target) return target.status();
  DNNB_TRY(expect_tensor(x, call.problem.dtype, "x"));
  DNNB_TRY(expect_tensor(y, *target, "y"));
  if (x.shape != y.shape) return Status::bad_input("cuda dequantize_blocks: x " + x.describe() + " and y " + y.describe() + " differ in shape");
  if (!y.is_contiguous()) return Status::unsupported("cuda dequantize_blocks: y " + y.describe() + " is not contiguous");
  switch (x.dtype) {
    case DType::q8_0: return launch_to<kQ8_0>(y.dtype, **device, x, y);
    case DType::q4_0: return launch_to<kQ4_0>(y.dtype, **device, x, y);
    case DType::mxfp8: return launch_to<kMxE4M3>(y.dtype, **device, x, y);
    case DType::mxfp4: return launch_to<kMxE2M1>(y.dtype, **device, x, y);
    case DType::mxfp8_e5m2: return launch_to<kMxE5M2>(y.dtype, **device, x, y);
    default: return Status::unsupported(std::string("cuda dequantize_blocks: ") + dtype_name(x.dtype) + " is not a block format");
  }
}

DNNB_REGISTER(register_cuda("dequantize_blocks", "", "",
                            {DType::q8_0, DType::q4_0, DType::mxfp8, DType::mxfp4, DType::mxfp8_e5m2}, run_dequantize,
                            [](const Problem& problem) {
                              auto target = ops::dequantize_target(problem);
                              return target ? Status::ok() : target.status();
                            }));

}  // namespace
}  // namespace dnnb::cuda_kernels
