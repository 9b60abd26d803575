// CUDA kv_cache: store one token per sequence into the caches at pos[b], then decode attention
// over positions 0..pos[b] (suites/ops/kv_cache_desc.h), as split-K decode (FlashDecoding): the
// positions of each (sequence, kv head) are cut into `splits` ranges, one block each, and a
// second kernel merges the ranges by their log-sum-exp. kv_cache.cuh has the shared pieces (the
// fused store, the block merge, the combine) and the FMA kernel; this file the tensor-core
// kernel, the plan and the launches.
//
// Kernels (128 threads a block; grid B x KV x head chunks x splits, the split fastest):
//   kv_decode_mma_kernel  f16/bf16 problems with a cache of the same 16-bit type (D 64, 128, 256)
//                         or an f8_e4m3fn cache (D 128, 256): q k^T and p v on mma.sync
//                         m16n8k16 (f32 accumulation), up to 8 query heads of a kv head per block.
//   kv_decode_fma_kernel  everything else (f32 problems, f32 and q8_0 caches, f16 <-> bf16, other
//                         head dims): f32 FMAs, 4 or 8 query heads per block.
//   kv_combine_kernel     when splits > 1: a block per (b, h).
//
// The tensor-core kernel. A warp takes 16 positions at a time (warp w of the block: positions
// lo + 16 w, then every 64th). Scores are S = K Q^T: K is the mma's A operand (16 positions x 16
// of D), q the B operand (8 heads, zero past the group). A dot product may take its terms in any
// order, so lane (g, t) = (lane / 4, lane % 4) loads 16-byte chunks t, t + 4, ... of rows g and
// g + 8 straight into A registers (gemv.cu's layout; 4 lanes read 64 contiguous bytes of a row),
// and q's B fragments, built once per block, hold q at the same positions of D. S's accumulator
// gives lane (g, t) positions g, g + 8 of heads 2t, 2t + 1, the heads of the online softmax it
// keeps (max shared by the 8 lanes of a t through 3 shuffles). Then O^T += V^T P^T: P (rounded to
// the problem dtype, FlashAttention's practice; l sums the f32 p) becomes the B operand by one
// movmatrix.trans per 8 x 8 half, and V^T is the A operand: lane (g, t) loads 16-byte chunks g,
// g + 8, ... of rows 2t, 2t + 1, 2t + 8, 2t + 9 (4 rows x 128 contiguous bytes per load) and
// pairs the two positions of each value with one byte permute; the d order is a permutation
// undone when the block writes its state. The f8_e4m3fn cache is widened to the problem dtype
// exactly by integer ops on the 16-byte loads (e4m3 magnitude bits shifted under the 16-bit
// type's exponent: f16 holds e4m3 x 2^-8 with no multiply, the 2^8 going into the scales; bf16
// holds e4m3 x 2^-120, times 2^120 by one bf16x2 FMA); a tile holding an e4m3 NaN (0x7F/0xFF,
// which the trick would read as 480) takes a variant that writes the NaN (a warp vote picks it).
//
// Splits: pos lives on the device, so the plan uses the capacity C: the split count minimises
// (waves of resident blocks) x (positions per block + a split's fixed cost), so that the grid
// fills the device (B x KV blocks alone are 128 on 132 SMs for 16 sequences of 8 kv heads).
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/gemm_mma.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "suites/ops/gemm_desc.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb::cuda_kernels::kv {
namespace {

// ---------------------------------------------------------------------------------------------
// The tensor-core kernel (see the top of the file).

__device__ __forceinline__ uint32_t transpose8x8(uint32_t x) {
  uint32_t r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(x));
  return r;
}

using attention::pack2;

// Bytes 1 and 3 of x (two e4m3 values; bytes 0 and 2 are ignored) as a T pair, low half from
// byte 1: f16 bits (sign, magnitude << 7) are the value x 2^-8, bf16 bits (sign, magnitude << 4)
// the value x 2^-120, then multiplied by 2^120 (0x7B80); e4m3 subnormals land on the 16-bit
// subnormals, so both are exact. kFix: magnitude 0x7F (NaN) gives the type's NaN.
template <typename T, bool kFix>
__device__ __forceinline__ uint32_t e4m3_pair(uint32_t x) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  uint32_t r = ((x & 0x7F007F00u) >> (kBf16 ? 4 : 1)) | (x & 0x80008000u);
  if constexpr (kBf16) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(r), "r"(0x7B807B80u), "r"(0x80008000u));
  if constexpr (kFix) {
    const uint32_t nan = kBf16 ? 0x7FC0u : 0x7E00u;
    if ((x & 0x7F00u) == 0x7F00u) r = (r & 0xFFFF0000u) | nan;
    if ((x & 0x7F000000u) == 0x7F000000u) r = (r & 0x0000FFFFu) | (nan << 16);
  }
  return r;
}

// Bit 7 of a byte of the result is set where that byte of w is an e4m3 NaN.
__device__ __forceinline__ uint32_t nan_bytes(uint32_t w) { return (w & 0x7F7F7F7Fu) + 0x01010101u; }

template <int N>
__device__ __forceinline__ bool any_nan(const uint4 (&v)[N]) {
  uint32_t x = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) x |= nan_bytes(v[i].x) | nan_bytes(v[i].y) | nan_bytes(v[i].z) | nan_bytes(v[i].w);
  return (x & 0x80808080u) != 0;
}

template <bool kF8, int D>
struct MmaShape {
  static constexpr int KT = D / 16;                       // k tiles of q k^T = m tiles of p v
  static constexpr int NKC = kF8 ? D / 64 : D / 32;       // K chunks per lane and row
  static constexpr int NVC = kF8 ? D / 128 : D / 64;      // V chunks per lane and row
};

// s += K Q^T for the tile: K chunk i of rows g (lo) and g + 8 (hi).
template <typename T, bool kF8, int D, bool kFix>
__device__ __forceinline__ void tile_scores(float (&s)[4], const uint4 (&klo)[MmaShape<kF8, D>::NKC],
                                            const uint4 (&khi)[MmaShape<kF8, D>::NKC],
                                            const uint32_t (&qb)[MmaShape<kF8, D>::KT][2]) {
#pragma unroll
  for (int i = 0; i < MmaShape<kF8, D>::NKC; ++i) {
    if constexpr (!kF8) {
      const uint32_t a0[4] = {klo[i].x, khi[i].x, klo[i].y, khi[i].y};
      gemm::mma_16816<T>(s, a0, qb[2 * i][0], qb[2 * i][1]);
      const uint32_t a1[4] = {klo[i].z, khi[i].z, klo[i].w, khi[i].w};
      gemm::mma_16816<T>(s, a1, qb[2 * i + 1][0], qb[2 * i + 1][1]);
    } else {
      // Word u of a chunk: values 4u .. 4u + 3; (4u, 4u + 2) are one k pair, (4u + 1, 4u + 3) the other.
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t lo = word_of(klo[i], u), hi = word_of(khi[i], u);
        const uint32_t a[4] = {e4m3_pair<T, kFix>(lo << 8), e4m3_pair<T, kFix>(hi << 8), e4m3_pair<T, kFix>(lo),
                               e4m3_pair<T, kFix>(hi)};
        gemm::mma_16816<T>(s, a, qb[4 * i + u][0], qb[4 * i + u][1]);
      }
    }
  }
}

// acc (O^T, m tile j) += V^T P^T: vr[0..3] are rows 2t, 2t + 1, 2t + 8, 2t + 9 of the tile.
template <typename T, bool kF8, int D, bool kFix>
__device__ __forceinline__ void tile_pv(float (&acc)[MmaShape<kF8, D>::KT][4],
                                        const uint4 (&vr)[4][MmaShape<kF8, D>::NVC], uint32_t b0, uint32_t b1) {
#pragma unroll
  for (int j = 0; j < MmaShape<kF8, D>::KT; ++j) {
    // m tile j: the lane's d pair j (values 2j, 2j + 1 of its chunks), row g and row g + 8.
    const int i = kF8 ? j / 8 : j / 4, wd = kF8 ? (j % 8) / 2 : j % 4;
    const uint32_t x0 = word_of(vr[0][i], wd), x1 = word_of(vr[1][i], wd);
    const uint32_t x2 = word_of(vr[2][i], wd), x3 = word_of(vr[3][i], wd);
    uint32_t a[4];
    if constexpr (!kF8) {
      a[0] = __byte_perm(x0, x1, 0x5410);
      a[1] = __byte_perm(x0, x1, 0x7632);
      a[2] = __byte_perm(x2, x3, 0x5410);
      a[3] = __byte_perm(x2, x3, 0x7632);
    } else {
      // Byte k of the first row into byte 1, of the second into byte 3.
      const int k = 2 * (j % 2);
      const uint32_t sel0 = ((4 + k) << 12) | (k << 4), sel1 = ((5 + k) << 12) | ((k + 1) << 4);
      a[0] = e4m3_pair<T, kFix>(__byte_perm(x0, x1, sel0));
      a[1] = e4m3_pair<T, kFix>(__byte_perm(x0, x1, sel1));
      a[2] = e4m3_pair<T, kFix>(__byte_perm(x2, x3, sel0));
      a[3] = e4m3_pair<T, kFix>(__byte_perm(x2, x3, sel1));
    }
    gemm::mma_16816<T>(acc[j], a, b0, b1);
  }
}

template <typename T, bool kF8, int D>
__global__ void __launch_bounds__(kThreads) kv_decode_mma_kernel(const KvArgs a) {
  using Shape = MmaShape<kF8, D>;
  constexpr int KT = Shape::KT, NKC = Shape::NKC, NVC = Shape::NVC;
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  constexpr DType C = kF8 ? DType::f8_e4m3fn : kDType<T>;
  constexpr bool kEarlyV = D <= 128;  // V loads with K's; at D = 256 after the scores (registers)
  __shared__ BlockState<D> st;
  const Work w = work_of(a);
  if (w.store) {
    store_token<T, C>(a, w);
    __syncthreads();  // the stored row is visible to the block's reads below
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;

  // q's B fragments: head g; k tile kt pairs the values that lane (g, t)'s K registers hold.
  uint32_t qb[KT][2];
  {
    const bool on = g < w.hn;
    const T* qr = static_cast<const T*>(a.q) + w.b * a.q_sb + static_cast<int64_t>(w.h0 + (on ? g : 0)) * a.q_sh;
    auto at = [&](int e) { return on ? to_float(qr[static_cast<int64_t>(e) * a.q_se]) : 0.f; };
#pragma unroll
    for (int kt = 0; kt < KT; ++kt) {
      const int base = kF8 ? 16 * (t + 4 * (kt / 4)) + 4 * (kt % 4) : 8 * (t + 4 * (kt / 2)) + 4 * (kt % 2);
      qb[kt][0] = pack2<T>(at(base), at(kF8 ? base + 2 : base + 1));
      qb[kt][1] = pack2<T>(at(kF8 ? base + 1 : base + 2), at(base + 3));
    }
  }
  // Scores in the log2 domain. f8: k = e4m3 x k_scale; the f16 widening holds e4m3 x 2^-8.
  const float widen = kF8 && !kBf16 ? 256.f : 1.f;
  const float sl2 = a.scale_log2e * (kF8 ? *a.k_scale * widen : 1.f);
  const float vmult = kF8 ? *a.v_scale * widen : 1.f;

  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // heads 2t, 2t + 1
  float acc[KT][4];
#pragma unroll
  for (int j = 0; j < KT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
  const int64_t first_row = (static_cast<int64_t>(w.b) * a.kv_heads + w.kvh) * a.capacity;
  const unsigned char* kc = a.k_cache + first_row * a.row_bytes;
  const unsigned char* vc = a.v_cache + first_row * a.row_bytes;
  const int last = w.hi - 1;

  for (int p0 = w.lo + warp * kTile; p0 < w.hi; p0 += kWarps * kTile) {
    const bool partial = p0 + kTile > w.hi;  // warp-uniform
    // Rows past the range read the last row of the range instead (never a position past pos[b]);
    // their scores become -inf and their values 0.
    const unsigned char* k0 = kc + min(p0 + g, last) * a.row_bytes;
    const unsigned char* k8 = kc + min(p0 + g + 8, last) * a.row_bytes;
    uint4 klo[NKC], khi[NKC], vr[4][NVC];
#pragma unroll
    for (int i = 0; i < NKC; ++i) {
      klo[i] = ldcg16(k0 + 16 * (t + 4 * i));
      khi[i] = ldcg16(k8 + 16 * (t + 4 * i));
    }
    auto load_v = [&] {
      const int rows[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const unsigned char* vrow = vc + min(p0 + rows[r], last) * a.row_bytes;
        const bool off = partial && p0 + rows[r] > last;
#pragma unroll
        for (int i = 0; i < NVC; ++i) vr[r][i] = off ? make_uint4(0, 0, 0, 0) : ldcg16(vrow + 16 * (g + 8 * i));
      }
    };
    if constexpr (kEarlyV) load_v();

    float s[4] = {0.f, 0.f, 0.f, 0.f};
    bool fix = false;  // warp-uniform: the mma and movmatrix below need the whole warp
    if constexpr (kF8) fix = __any_sync(0xffffffffu, any_nan(klo) || any_nan(khi));
    if (fix) {
      tile_scores<T, kF8, D, true>(s, klo, khi, qb);
    } else {
      tile_scores<T, kF8, D, false>(s, klo, khi, qb);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) s[k] = cap_score(a, s[k] * sl2);
    if (partial) {
      if (p0 + g > last) s[0] = s[1] = -INFINITY;
      if (p0 + g + 8 > last) s[2] = s[3] = -INFINITY;
    }
    // Online softmax of heads 2t (s[0], s[2]) and 2t + 1 (s[1], s[3]) over the tile's positions.
    float x0 = fmaxf(s[0], s[2]), x1 = fmaxf(s[1], s[3]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, o));
      x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, o));
    }
    float alpha0, alpha1;
    const float z0 = softmax_shift(m0, x0, alpha0), z1 = softmax_shift(m1, x1, alpha1);
    const float p00 = exp2f(s[0] - z0), p01 = exp2f(s[1] - z1), p10 = exp2f(s[2] - z0), p11 = exp2f(s[3] - z1);
    l0 = fmaf(l0, alpha0, p00 + p10);
    l1 = fmaf(l1, alpha1, p01 + p11);
#pragma unroll
    for (int j = 0; j < KT; ++j) {
      acc[j][0] *= alpha0;
      acc[j][1] *= alpha1;
      acc[j][2] *= alpha0;
      acc[j][3] *= alpha1;
    }
    // P^T as the B operand: (positions 2t, 2t + 1 | 2t + 8, 2t + 9; head g).
    const uint32_t b0 = transpose8x8(pack2<T>(p00, p01)), b1 = transpose8x8(pack2<T>(p10, p11));
    if constexpr (!kEarlyV) load_v();
    if constexpr (kF8) fix = __any_sync(0xffffffffu, any_nan(vr[0]) || any_nan(vr[1]) || any_nan(vr[2]) || any_nan(vr[3]));
    if (fix) {
      tile_pv<T, kF8, D, true>(acc, vr, b0, b1);
    } else {
      tile_pv<T, kF8, D, false>(acc, vr, b0, b1);
    }
  }

  // The warp's state: l summed over the 8 lanes of a t; acc (O^T) back to the d order.
#pragma unroll
  for (int o = 4; o < 32; o <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, o);
    l1 += __shfl_xor_sync(0xffffffffu, l1, o);
  }
#pragma unroll
  for (int j = 0; j < KT; ++j) {
    const int d0 = kF8 ? 16 * (g + 8 * (j / 8)) + 2 * (j % 8) : 8 * (g + 8 * (j / 4)) + 2 * (j % 4);
    st.acc[warp][2 * t][d0] = acc[j][0];
    st.acc[warp][2 * t + 1][d0] = acc[j][1];
    st.acc[warp][2 * t][d0 + 1] = acc[j][2];
    st.acc[warp][2 * t + 1][d0 + 1] = acc[j][3];
  }
  if (g == 0) {
    st.m[warp][2 * t] = m0;
    st.m[warp][2 * t + 1] = m1;
    st.l[warp][2 * t] = l0;
    st.l[warp][2 * t + 1] = l1;
  }
  __syncthreads();
  finish_block<T>(a, w, st, vmult);
}

// ---------------------------------------------------------------------------------------------
// Host side.

using Kernel = void (*)(KvArgs);

// A split's fixed cost in positions (its blocks' start, merge and partial write, and its share
// of the combine), against which more splits must win.
inline constexpr int64_t kSplitCost = 32;

struct Plan {
  bool mma = false;
  int chunk_heads = 1, head_chunks = 1, lane_shift = 0;
  int splits = 1, chunk = kTile;
  int64_t blocks = 0;
  Kernel decode = nullptr;
  Kernel combine = nullptr;
};

int fma_values(DType cache) { return cache == DType::f8_e4m3fn || cache == DType::q8_0 ? 16 : 8; }

Status shape_supported(const ops::KvCacheDesc& d) {
  if (d.d > kMaxD)
    return Status::unsupported("cuda kv_cache: head dims up to " + std::to_string(kMaxD) +
                               " (a lane holds its values of q and of the output in registers), got D=" +
                               std::to_string(d.d));
  if (d.d % fma_values(d.cache) != 0)
    return Status::unsupported("cuda kv_cache: a cache row is read in 16-byte vectors, so D must be a multiple of " +
                               std::to_string(fma_values(d.cache)) + " for a " + dtype_name(d.cache) +
                               " cache, got D=" + std::to_string(d.d));
  if (d.capacity > (1 << 30) || d.batch * d.heads > INT_MAX)
    return Status::unsupported("cuda kv_cache: positions and (sequence, head) pairs must fit the kernels' 32-bit indices");
  return Status::ok();
}

// The tensor-core kernel takes f16/bf16 problems whose cache widens exactly to the problem dtype.
bool uses_mma(const ops::KvCacheDesc& d) {
  if (d.dtype != DType::f16 && d.dtype != DType::bf16) return false;
  if (d.cache == d.dtype) return d.d == 64 || d.d == 128 || d.d == 256;
  return d.cache == DType::f8_e4m3fn && (d.d == 128 || d.d == 256);
}

template <typename T>
Kernel mma_kernel(const ops::KvCacheDesc& d) {
  if constexpr (std::is_same_v<T, float>) {
    return nullptr;
  } else {
    if (d.cache == DType::f8_e4m3fn) return d.d == 128 ? kv_decode_mma_kernel<T, true, 128> : kv_decode_mma_kernel<T, true, 256>;
    if (d.d == 64) return kv_decode_mma_kernel<T, false, 64>;
    return d.d == 128 ? kv_decode_mma_kernel<T, false, 128> : kv_decode_mma_kernel<T, false, 256>;
  }
}

template <typename T, DType C>
Kernel fma_kernel_of(int heads) {
  if constexpr (kFmaE<C> == 8) {
    if (heads == 8) return kv_decode_fma_kernel<T, C, 8>;
  }
  return kv_decode_fma_kernel<T, C, 4>;
}

template <typename T>
Kernel fma_kernel(DType cache, int heads) {
  switch (cache) {
    case DType::f32: return fma_kernel_of<T, DType::f32>(heads);
    case DType::f16: return fma_kernel_of<T, DType::f16>(heads);
    case DType::bf16: return fma_kernel_of<T, DType::bf16>(heads);
    case DType::f8_e4m3fn: return fma_kernel_of<T, DType::f8_e4m3fn>(heads);
    case DType::q8_0: return fma_kernel_of<T, DType::q8_0>(heads);
    default: return nullptr;
  }
}

// Resident blocks of a kernel per SM, asked once per (kernel, device).
Result<int> blocks_per_sm(Kernel kernel, const CudaDevice& device) {
  static std::mutex mutex;
  static std::map<std::pair<Kernel, int>, int> known;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(kernel, device.ordinal());
  if (auto it = known.find(key); it != known.end()) return it->second;
  int blocks = 0;
  DNNB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, 0));
  known[key] = std::max(blocks, 1);
  return known[key];
}

// Splits of the capacity C (the lengths are on the device): the count minimising
// ceil(blocks / resident) x (chunk + kSplitCost), the fewest on a tie; chunks are whole tiles.
void choose_splits(Plan& p, int64_t units, int64_t capacity, int64_t resident) {
  int64_t best = INT64_MAX;
  const int64_t most = std::min<int64_t>(kMaxSplits, ceil_div(capacity, kTile));
  for (int64_t s = 1; s <= most; ++s) {
    const int64_t chunk = round_up(ceil_div(capacity, s), kTile);
    if (ceil_div(capacity, chunk) != s) continue;  // the same chunk as a smaller s
    const int64_t cost = ceil_div(units * s, resident) * (chunk + kSplitCost);
    if (cost < best) {
      best = cost;
      p.splits = static_cast<int>(s);
      p.chunk = static_cast<int>(chunk);
    }
  }
}

Result<Plan> make_plan(const Problem& problem, const CudaDevice& device) {
  auto d = ops::kv_cache_desc(problem);
  if (!d) return d.status();
  DNNB_TRY(shape_supported(*d));
  Plan p;
  p.mma = uses_mma(*d);
  const int64_t group = d->group();
  const int values = fma_values(d->cache);
  const int heads = p.mma ? kMaxHeads : (values == 8 && group > 4 ? 8 : 4);
  p.chunk_heads = static_cast<int>(std::min<int64_t>(group, heads));
  p.head_chunks = static_cast<int>(ceil_div(group, p.chunk_heads));
  while ((static_cast<int64_t>(values) << p.lane_shift) < d->d) ++p.lane_shift;  // lanes per row
  DNNB_TRY(dispatch_float(problem.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    p.decode = p.mma ? mma_kernel<T>(*d) : fma_kernel<T>(d->cache, heads);
    p.combine = kv_combine_kernel<T>;
    return p.decode ? Status::ok() : Status::error("cuda kv_cache: no kernel for " + problem.to_string());
  }));
  auto per_sm = blocks_per_sm(p.decode, device);
  if (!per_sm) return per_sm.status();
  const int64_t units = d->batch * d->kv_heads * p.head_chunks;
  choose_splits(p, units, d->capacity, static_cast<int64_t>(*per_sm) * device.sm_count());
  p.blocks = units * p.splits;
  if (p.blocks > INT_MAX)
    return Status::unsupported("cuda kv_cache: " + std::to_string(p.blocks) + " blocks exceed the grid");
  return p;
}

size_t partial_bytes(const ops::KvCacheDesc& d, int splits) {
  if (splits == 1) return 0;
  return static_cast<size_t>(d.batch * d.heads * splits * (d.d + 1)) * sizeof(float);
}

Result<size_t> kv_workspace(const Problem& problem, const DeviceRuntime& device) {
  if (device.info().kind != DeviceKind::cuda) return size_t{0};
  const auto& cuda = static_cast<const CudaDevice&>(device);
  DNNB_TRY(cuda.activate());
  auto p = make_plan(problem, cuda);
  if (!p) return p.status();
  auto d = ops::kv_cache_desc(problem);
  return partial_bytes(*d, p->splits);
}

// A 3-d token operand (q, k, v, o): dtype, shape and its strides.
Status token_operand(const Tensor& t, DType dtype, const Shape& shape, const char* name, const void*& data,
                     int64_t& sb, int64_t& sh, int64_t& se) {
  DNNB_TRY(expect_tensor(t, dtype, name));
  if (t.shape != shape || t.strides.size() != 3)
    return Status::bad_input(std::string("cuda kv_cache: ") + name + " is " + t.describe() + ", expected shape " +
                             shape_to_string(shape));
  data = data_ptr<unsigned char>(t);
  sb = t.strides[0];
  sh = t.strides[1];
  se = t.strides[2];
  return Status::ok();
}

Status cache_operand(const Tensor& t, const ops::KvCacheDesc& d, const char* name, unsigned char*& data) {
  DNNB_TRY(expect_tensor(t, d.cache, name));
  if (t.shape != ops::kv_cache_cache_shape(d) || !t.is_contiguous())
    return Status::unsupported(std::string("cuda kv_cache: ") + name + " must be a contiguous " +
                               shape_to_string(ops::kv_cache_cache_shape(d)) + " tensor, got " + t.describe());
  data = data_ptr<unsigned char>(t);
  const uintptr_t align = d.cache == DType::q8_0 ? 2 : 16;  // q8_0 is read in 2-byte pieces
  if (reinterpret_cast<uintptr_t>(data) % align != 0)
    return Status::unsupported(std::string("cuda kv_cache: ") + name + " is not " + std::to_string(align) +
                               "-byte aligned");
  return Status::ok();
}

Status run_kv_cache(OpCall& call) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  auto d = ops::kv_cache_desc(call.problem);
  if (!d) return d.status();
  const size_t n_in = d->scaled() ? 8 : 6;
  if (call.inputs.size() != n_in || call.outputs.size() != 1)
    return Status::bad_input("cuda kv_cache: " + std::to_string(call.inputs.size()) + " inputs and " +
                             std::to_string(call.outputs.size()) + " outputs, the signature has " +
                             std::to_string(n_in) + " and 1");
  auto plan = make_plan(call.problem, **device);
  if (!plan) return plan.status();
  const DType t = call.problem.dtype;
  KvArgs a{};
  const void* out = nullptr;
  DNNB_TRY(token_operand(call.inputs[0], t, ops::kv_cache_q_shape(*d), "q", a.q, a.q_sb, a.q_sh, a.q_se));
  DNNB_TRY(token_operand(call.inputs[1], t, ops::kv_cache_token_shape(*d), "k", a.k, a.k_sb, a.k_sh, a.k_se));
  DNNB_TRY(token_operand(call.inputs[2], t, ops::kv_cache_token_shape(*d), "v", a.v, a.v_sb, a.v_sh, a.v_se));
  DNNB_TRY(token_operand(call.outputs[0], t, ops::kv_cache_q_shape(*d), "o", out, a.o_sb, a.o_sh, a.o_se));
  a.o = const_cast<void*>(out);
  const Tensor& pos = call.inputs[3];
  DNNB_TRY(expect_tensor(pos, DType::i32, "pos"));
  if (pos.shape != Shape{d->batch} || !pos.is_contiguous())
    return Status::bad_input("cuda kv_cache: pos is " + pos.describe() + ", expected a contiguous [" +
                             std::to_string(d->batch) + "]");
  a.pos = data_ptr<int32_t>(pos);
  DNNB_TRY(cache_operand(call.inputs[4], *d, "k_cache", a.k_cache));
  DNNB_TRY(cache_operand(call.inputs[5], *d, "v_cache", a.v_cache));
  if (d->scaled()) {
    for (auto [i, name, dst] : {std::tuple{6, "k_scale", &a.k_scale}, {7, "v_scale", &a.v_scale}}) {
      DNNB_TRY(expect_tensor(call.inputs[i], DType::f32, name));
      if (call.inputs[i].numel() != 1) return Status::bad_input(std::string("cuda kv_cache: ") + name + " is not [1]");
      *dst = data_ptr<float>(call.inputs[i]);
    }
  }
  if (plan->splits > 1) {
    const size_t need = partial_bytes(*d, plan->splits);
    const Tensor& ws = call.workspace;
    if (!ws.buffer || ws.buffer->handle == nullptr || storage_bytes(ws.dtype, ws.numel()) < need)
      return Status::error("cuda kv_cache: the workspace of " + std::to_string(need) + " bytes for the splits is missing");
    unsigned char* base = data_ptr<unsigned char>(ws);
    if (reinterpret_cast<uintptr_t>(base) % alignof(float) != 0)
      return Status::error("cuda kv_cache: the workspace is not 4-byte aligned");
    a.part_o = reinterpret_cast<float*>(base);
    a.part_lse = a.part_o + d->batch * d->heads * plan->splits * d->d;
  }
  a.row_bytes = static_cast<int64_t>(storage_bytes(d->cache, d->d));
  a.batch = static_cast<int>(d->batch);
  a.heads = static_cast<int>(d->heads);
  a.kv_heads = static_cast<int>(d->kv_heads);
  a.group = static_cast<int>(d->group());
  a.capacity = static_cast<int>(d->capacity);
  a.d = static_cast<int>(d->d);
  a.chunk_heads = plan->chunk_heads;
  a.head_chunks = plan->head_chunks;
  a.splits = plan->splits;
  a.chunk = plan->chunk;
  a.lane_shift = plan->lane_shift;
  a.scale_log2e = static_cast<float>(d->scale * 1.4426950408889634);
  a.cap_log2e = static_cast<float>(d->softcap * 1.4426950408889634);
  a.window = d->window > INT_MAX ? 0 : static_cast<int>(d->window);  // a window past 2^31 positions covers them all
  const cudaStream_t stream = (*device)->stream();
  plan->decode<<<static_cast<unsigned>(plan->blocks), kThreads, 0, stream>>>(a);
  DNNB_CUDA_CHECK_LAUNCH();
  if (plan->splits > 1) {
    plan->combine<<<static_cast<unsigned>(d->batch * d->heads), kThreads, 0, stream>>>(a);
    DNNB_CUDA_CHECK_LAUNCH();
  }
  return Status::ok();
}

bool register_kv_cache() {
  Implementation impl;
  impl.op = "kv_cache";
  impl.backend = "cuda";
  impl.dtypes = {DType::f32, DType::f16, DType::bf16};
  impl.supports = [](const Problem& problem, const DeviceRuntime& device) -> Status {
    if (device.info().kind != DeviceKind::cuda)
      return Status::unsupported("cuda kernels run on CUDA devices, not " + device.info().id);
    if (problem.dtype != DType::f32 && problem.dtype != DType::f16 && problem.dtype != DType::bf16)
      return Status::unsupported(std::string("cuda kv_cache has no ") + dtype_name(problem.dtype) + " kernel");
    auto d = ops::kv_cache_desc(problem);
    return d ? shape_supported(*d) : d.status();
  };
  impl.run = run_kv_cache;
  impl.workspace_bytes = kv_workspace;
  impl.compute_unit_for = [](const Problem& problem, const DeviceRuntime&) -> std::string {
    auto d = ops::kv_cache_desc(problem);
    return d && uses_mma(*d) ? ops::tensor_core_unit(problem) : std::string("f32_fma");
  };
  return Registry::instance().add_implementation(std::move(impl));
}

DNNB_REGISTER(register_kv_cache());

}  // namespace
}  // namespace dnnb::cuda_kernels::kv
