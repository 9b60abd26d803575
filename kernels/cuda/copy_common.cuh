// Bit-exact strided copies for the layout ops (permute, concat, slice, repeat_kv): a source view
// of any strides is copied into a destination view of a contiguous output (the whole output, or
// a block of it such as concat's halves). Elements move as 2- or 4-byte patterns
// (uint16_t / uint32_t, by the dtype's size), never through float, so every bit (NaN payloads,
// signed zeros, subnormals) arrives unchanged.
//
// plan_copy reduces the copy to one of two kernels:
//  - rows (copy_rows_kernel): the source's innermost dim has unit stride, like the destination's.
//    The copy is a batch of rows; each thread takes kCopyUnroll chunks of 16 bytes' worth of
//    elements (4 x f32, 8 x f16/bf16), loads them all, then stores them: 16-byte accesses when
//    both sides' row starts are 16-byte aligned, else one access per element (also the case
//    where no source dim has unit stride, or the destination's unit dim has size 1).
//  - transpose (copy_transpose_kernel): the source's unit-stride dim p is not the destination's
//    innermost dim L. A block copies a tile of kCopyTileRows x TC elements (TC = 128 bytes of
//    elements: 32 x f32, 64 x f16/bf16) through shared memory: rows along L read from the source
//    in 128-byte runs along p, columns written to the destination in runs along L. Accesses are
//    W elements wide on both sides (16 bytes, else 8, else one element, whichever alignment
//    allows); the tile's rows are padded by 4 bytes so that the column reads hit distinct banks.
//    Other dims are a batch.
// Before choosing, size-1 dims are dropped, one dim the source repeats (stride 0: repeat_kv's
// n_rep) is taken out as `rep` (each element loaded once and stored rep times), and neighbouring
// dims that are contiguous in both views are merged, so any permutation of up to 4 dims (and
// repeat_kv's 5-d view) ends as at most 5 dims. Index math is 32-bit with multiply-shift
// division (FastDivmod); the offsets are 64-bit.
//
// The per-thread bodies are __host__ __device__ functions (the kernels call them with the
// block's barrier between the transpose's two phases), so they can be exercised on the host.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"

// Own namespace: other kernel headers of this library may name their helpers alike.
namespace dnnb::cuda_kernels::layout {

// `#pragma unroll` for the device compilation only: the per-thread bodies are also host code,
// where the host compiler would warn about the unknown pragma.
#if defined(__CUDA_ARCH__)
#define DNNB_COPY_UNROLL _Pragma("unroll")
#else
#define DNNB_COPY_UNROLL
#endif

inline constexpr int kCopyMaxDims = 5;
inline constexpr int kCopyThreads = 256;  // threads per block, every copy kernel
inline constexpr int kCopyUnroll = 4;     // 16-byte chunks per thread in the rows kernel
inline constexpr int kCopyTileRows = 64;      // transpose tile extent along the destination's rows

// n / d and n % d for a divisor fixed at launch: a multiply-high, a subtract, an add and two
// shifts instead of a ~20-instruction division (Granlund and Montgomery, "Division by invariant
// integers using multiplication", 1994, figure 4.1): with l = ceil(log2 d) and
// m = floor(2^32 (2^l - d) / d) + 1, n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0)
// where t = (m n) >> 32, for every n < 2^32 and 1 <= d < 2^32.
struct FastDivmod {
  uint32_t d = 1, m = 1, s1 = 0, s2 = 0;

  static FastDivmod of(uint32_t divisor) {
    FastDivmod f;
    f.d = divisor;
    int l = 0;
    while ((uint64_t{1} << l) < divisor) ++l;
    f.m = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << l) - divisor)) / divisor + 1);
    f.s1 = l < 1 ? l : 1;
    f.s2 = l > 1 ? l - 1 : 0;
    return f;
  }
  __host__ __device__ __forceinline__ uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t t = __umulhi(n, m);
#else
    const uint32_t t = static_cast<uint32_t>((uint64_t{n} * m) >> 32);
#endif
    return (t + ((n - t) >> s1)) >> s2;
  }
  // Quotient, and n - quotient * d in `rem`.
  __host__ __device__ __forceinline__ uint32_t divmod(uint32_t n, uint32_t& rem) const {
    const uint32_t q = div(n);
    rem = n - q * d;
    return q;
  }
};

// W elements moved as one access (16, 8 or sizeof(E) bytes): the compiler emits one 128-, 64-
// or 32/16-bit load or store for an aligned Chunk.
template <typename E, int W>
struct alignas(W * sizeof(E)) Chunk {
  E v[W];
};

// ---------------------------------------------------------------------------------------------
// Rows kernel.

struct CopyRowsArgs {
  const void* src = nullptr;
  void* dst = nullptr;
  int outer = 0;  // outer dims, outermost first; row r decomposes over them
  FastDivmod outer_size[kCopyMaxDims - 1];
  int64_t src_stride[kCopyMaxDims - 1] = {};
  int64_t dst_stride[kCopyMaxDims - 1] = {};
  FastDivmod chunks_per_row;  // ceil(cols / chunk elements)
  uint32_t chunks = 0;        // rows * chunks_per_row
  uint32_t cols = 0;
  int64_t src_col_stride = 1;  // 1 on the vector path
  int64_t dst_col_stride = 1;  // 1 except where the destination's unit dim had size 1
  uint32_t rep = 1;            // stores per loaded element
  int64_t rep_stride = 0;      // destination elements between the copies
};

// Source and destination offsets of row `row` (elements, 64-bit).
template <int kOuterMax>
__host__ __device__ __forceinline__ void row_offsets(int outer, const FastDivmod* size, const int64_t* src_stride,
                                                     const int64_t* dst_stride, uint32_t row, int64_t& so,
                                                     int64_t& dof) {
  so = 0;
  dof = 0;
DNNB_COPY_UNROLL
  for (int d = kOuterMax - 1; d >= 0; --d) {
    if (d < outer) {
      uint32_t idx;
      row = size[d].divmod(row, idx);
      so += static_cast<int64_t>(idx) * src_stride[d];
      dof += static_cast<int64_t>(idx) * dst_stride[d];
    }
  }
}

// Copies elements [c, c + n) of a row, one access per element, rep times.
template <typename E>
__host__ __device__ __forceinline__ void copy_elements(const CopyRowsArgs& a, const E* src, E* dst, uint32_t n) {
  for (uint32_t k = 0; k < n; ++k) {
    const E v = src[static_cast<int64_t>(k) * a.src_col_stride];
    for (uint32_t r = 0; r < a.rep; ++r) dst[static_cast<int64_t>(r) * a.rep_stride + k * a.dst_col_stride] = v;
  }
}

// Thread `thread` of block `block`: chunks block * kCopyThreads * kCopyUnroll + thread + u *
// kCopyThreads (u < kCopyUnroll), each the 16 bytes' worth of elements [c, c + V) of one row,
// fewer at a row's end.
//  - kVector: every row start is 16-byte aligned on both sides (plan_copy checked). Whole
//    chunks are one 16-byte load each, all loaded before any is stored; the partial chunk at a
//    row's end is copied element by element where it is met (not held: fewer registers).
//  - otherwise every element is its own access, the thread's elements all loaded before any is
//    stored.
template <typename E, bool kVector>
__host__ __device__ __forceinline__ void copy_rows_thread(const CopyRowsArgs& a, uint32_t block, uint32_t thread) {
  constexpr int V = 16 / static_cast<int>(sizeof(E));
  using C = Chunk<E, V>;
  const E* src = static_cast<const E*>(a.src);
  E* dst = static_cast<E*>(a.dst);
  C buf[kCopyUnroll];
  int64_t dst_off[kCopyUnroll];
  uint32_t n[kCopyUnroll];  // elements held in buf[u]; 0 = nothing to store
  const uint32_t first = block * (kCopyThreads * kCopyUnroll) + thread;
DNNB_COPY_UNROLL
  for (int u = 0; u < kCopyUnroll; ++u) {
    const uint32_t s = first + u * kCopyThreads;
    n[u] = 0;
    dst_off[u] = 0;
    if (s < a.chunks) {
      uint32_t ch;
      const uint32_t row = a.chunks_per_row.divmod(s, ch);
      int64_t so, dof;
      row_offsets<kCopyMaxDims - 1>(a.outer, a.outer_size, a.src_stride, a.dst_stride, row, so, dof);
      const uint32_t c = ch * V;
      const uint32_t count = a.cols - c < static_cast<uint32_t>(V) ? a.cols - c : V;
      dst_off[u] = dof + static_cast<int64_t>(c) * a.dst_col_stride;
      if constexpr (kVector) {
        if (count == V) {
          buf[u] = *reinterpret_cast<const C*>(src + so + c);
          n[u] = V;
        } else {
          copy_elements(a, src + so + c, dst + dst_off[u], count);
        }
      } else {
        n[u] = count;
DNNB_COPY_UNROLL
        for (int k = 0; k < V; ++k)
          buf[u].v[k] = static_cast<uint32_t>(k) < count ? src[so + static_cast<int64_t>(c + k) * a.src_col_stride] : E{0};
      }
    }
  }
DNNB_COPY_UNROLL
  for (int u = 0; u < kCopyUnroll; ++u) {
    if (n[u] == 0) continue;
    for (uint32_t r = 0; r < a.rep; ++r) {
      E* d = dst + dst_off[u] + static_cast<int64_t>(r) * a.rep_stride;
      if constexpr (kVector) {
        *reinterpret_cast<C*>(d) = buf[u];
      } else {
DNNB_COPY_UNROLL
        for (int k = 0; k < V; ++k)
          if (static_cast<uint32_t>(k) < n[u]) d[k * a.dst_col_stride] = buf[u].v[k];
      }
    }
  }
}

template <typename E, bool kVector>
__global__ void __launch_bounds__(kCopyThreads, 4) copy_rows_kernel(CopyRowsArgs a) {
  copy_rows_thread<E, kVector>(a, blockIdx.x, threadIdx.x);
}

// ---------------------------------------------------------------------------------------------
// Transpose kernel.

struct CopyTransposeArgs {
  const void* src = nullptr;
  void* dst = nullptr;
  uint32_t n_l = 0, n_p = 0;   // extents of L (destination-contiguous) and p (source-contiguous)
  int64_t src_stride_l = 0;    // p's source stride is 1
  int64_t dst_stride_p = 0;    // L's destination stride is 1
  FastDivmod tiles_l, tiles_p;
  int batch = 0;               // other dims, outermost first
  FastDivmod batch_size[kCopyMaxDims - 2];
  int64_t batch_src[kCopyMaxDims - 2] = {};
  int64_t batch_dst[kCopyMaxDims - 2] = {};
  uint32_t rep = 1;
  int64_t rep_stride = 0;
};

// Tile geometry per element type: kCopyTileRows rows (along L) of TC columns (along p, 128
// bytes), each row padded by 4 bytes: a row is then 33 banks (4-byte words) long, so stepping one
// row moves one bank. Phase 1 writes rows (a lane's W elements in one row, neighbouring lanes on
// neighbouring chunks or rows): distinct banks. Phase 2 reads columns: a lane reads W consecutive
// rows of one column, so lane groups are arranged for distinct banks there too (see
// transpose_store_thread). Unpadded, a column read would be a 32-way conflict.
template <typename E>
struct TileShape {
  static constexpr int cols = 128 / static_cast<int>(sizeof(E));
  static constexpr int pad = 4 / static_cast<int>(sizeof(E));
  static constexpr int stride = cols + pad;
};

// The tile's source and destination origins: block -> (tile along L, tile along p, batch index).
__host__ __device__ __forceinline__ void transpose_tile_origin(const CopyTransposeArgs& a, uint32_t block,
                                                               uint32_t tile_cols, uint32_t& l0, uint32_t& p0,
                                                               int64_t& so, int64_t& dof) {
  uint32_t tl, tp;
  uint32_t rest = a.tiles_l.divmod(block, tl);
  rest = a.tiles_p.divmod(rest, tp);
  l0 = tl * kCopyTileRows;
  p0 = tp * tile_cols;
  row_offsets<kCopyMaxDims - 2>(a.batch, a.batch_size, a.batch_src, a.batch_dst, rest, so, dof);
}

// Phase 1: the tile's source rows into shared memory. Each thread loads all of its chunks
// before writing any to shared memory (its loads in flight together). Chunks past the source's
// edge are not read; their tile entries are left as they were and never stored.
template <typename E, int W>
__host__ __device__ __forceinline__ void transpose_load_thread(const CopyTransposeArgs& a, uint32_t block,
                                                               uint32_t thread, E* tile) {
  using T = TileShape<E>;
  constexpr int kPerRow = T::cols / W;
  constexpr int kIters = kCopyTileRows * kPerRow / kCopyThreads;
  static_assert(kIters >= 1 && kCopyTileRows * kPerRow % kCopyThreads == 0, "tile must split evenly over the block");
  uint32_t l0, p0;
  int64_t so, dof;
  transpose_tile_origin(a, block, T::cols, l0, p0, so, dof);
  const E* src = static_cast<const E*>(a.src) + so;
  Chunk<E, W> buf[kIters];
DNNB_COPY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const uint32_t i = thread + it * kCopyThreads;
    const uint32_t l = l0 + i / kPerRow, p = p0 + (i % kPerRow) * W;
    if (l < a.n_l && p < a.n_p) {
      const E* s = src + static_cast<int64_t>(l) * a.src_stride_l + p;
      if (p + W <= a.n_p) {
        buf[it] = *reinterpret_cast<const Chunk<E, W>*>(s);
      } else {
DNNB_COPY_UNROLL
        for (int k = 0; k < W; ++k) buf[it].v[k] = p + k < a.n_p ? s[k] : E{0};
      }
    }
  }
DNNB_COPY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const uint32_t i = thread + it * kCopyThreads;
    const uint32_t r = i / kPerRow, c = (i % kPerRow) * W;
    if (l0 + r < a.n_l && p0 + c < a.n_p) {
DNNB_COPY_UNROLL
      for (int k = 0; k < W; ++k) tile[r * T::stride + c + k] = buf[it].v[k];
    }
  }
}

// Phase 2 (after the block's barrier): column q of the tile is destination row p0 + q; a thread
// gathers W consecutive tile rows of it (destination columns l .. l + W - 1) and stores them as
// one chunk, rep times. Each 32 consecutive work items (one warp's) take S = 32 / W chunks of
// each of W destination rows: lane g reads rows W (g % S) + k of column g / S, so the words it
// reads sit in bank W (g % S) + k + (g / S) (f32; g / S / 2 for 16-bit, two columns per word),
// distinct across the warp for each k. Each destination row gets a run of S chunks (32 elements:
// 128 bytes of f32, 64 of f16/bf16), whole 32-byte sectors.
template <typename E, int W>
__host__ __device__ __forceinline__ void transpose_store_thread(const CopyTransposeArgs& a, uint32_t block,
                                                                uint32_t thread, const E* tile) {
  using T = TileShape<E>;
  constexpr int kPerDstRow = kCopyTileRows / W;  // chunks per destination row of the tile
  constexpr int S = 32 / W;                      // chunks of one row per warp: kPerDstRow / 2
  constexpr int kIters = T::cols * kPerDstRow / kCopyThreads;
  static_assert(kPerDstRow == 2 * S && T::cols % W == 0, "two runs of S chunks per destination row");
  uint32_t l0, p0;
  int64_t so, dof;
  transpose_tile_origin(a, block, T::cols, l0, p0, so, dof);
  E* dst = static_cast<E*>(a.dst) + dof;
DNNB_COPY_UNROLL
  for (int it = 0; it < kIters; ++it) {
    const uint32_t i = thread + it * kCopyThreads;
    const uint32_t g = i % 32, grp = i / 32;
    const uint32_t q = g / S + W * (grp / 2), r = (g % S + S * (grp % 2)) * W;
    const uint32_t p = p0 + q, l = l0 + r;
    if (p >= a.n_p || l >= a.n_l) continue;
    Chunk<E, W> out;
DNNB_COPY_UNROLL
    for (int k = 0; k < W; ++k) out.v[k] = tile[(r + k) * T::stride + q];
    E* d = dst + static_cast<int64_t>(p) * a.dst_stride_p + l;
    for (uint32_t rep = 0; rep < a.rep; ++rep) {
      E* dr = d + static_cast<int64_t>(rep) * a.rep_stride;
      if (l + W <= a.n_l) {
        *reinterpret_cast<Chunk<E, W>*>(dr) = out;
      } else {
DNNB_COPY_UNROLL
        for (int k = 0; k < W; ++k)
          if (l + k < a.n_l) dr[k] = out.v[k];
      }
    }
  }
}

template <typename E, int W>
__global__ void __launch_bounds__(kCopyThreads) copy_transpose_kernel(CopyTransposeArgs a) {
  __shared__ E tile[kCopyTileRows * TileShape<E>::stride];
  transpose_load_thread<E, W>(a, blockIdx.x, threadIdx.x, tile);
  __syncthreads();
  transpose_store_thread<E, W>(a, blockIdx.x, threadIdx.x, tile);
}

// ---------------------------------------------------------------------------------------------
// Host side.

// A copy in elements: `shape` with the source's and destination's strides, from element 0 of
// each view (byte pointers; the tensors' offsets already applied).
struct StridedCopy {
  int esize = 4;  // bytes per element: 2 or 4
  const void* src = nullptr;
  void* dst = nullptr;
  Shape shape, src_strides, dst_strides;
};

// The kernel and its arguments for one StridedCopy.
struct CopyPlan {
  enum class Kind { empty, rows, transpose } kind = Kind::empty;
  int esize = 4;
  bool vector = false;  // rows: 16-byte chunks
  int width = 1;        // transpose: elements per access (W)
  CopyRowsArgs rows;
  CopyTransposeArgs transpose;
  uint32_t blocks = 0;
};

// The copy of `src` (any strides) into `dst` (same dtype and shape; a view of a contiguous
// tensor): bad_input when they differ, unsupported for elements of other than 2 or 4 bytes.
inline Result<StridedCopy> strided_copy(const Tensor& src, const Tensor& dst, const char* what) {
  if (src.dtype != dst.dtype || src.shape != dst.shape)
    return Status::bad_input(std::string(what) + ": copy from " + src.describe() + " to " + dst.describe() +
                             " needs one dtype and shape");
  const int esize = static_cast<int>(storage_bytes(src.dtype, 1));
  if (esize != 2 && esize != 4)
    return Status::unsupported(std::string(what) + ": cuda copies move 2- or 4-byte elements, not " +
                               dtype_name(src.dtype));
  StridedCopy c;
  c.esize = esize;
  c.src = data_ptr<char>(src);
  c.dst = data_ptr<char>(dst);
  c.shape = src.shape;
  c.src_strides = src.strides;
  c.dst_strides = dst.strides;
  return c;
}

namespace copy_detail {
inline bool fits_u32(int64_t v) { return v >= 0 && v <= static_cast<int64_t>(UINT32_MAX); }
inline bool aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
}  // namespace copy_detail

// Chooses the kernel for `c` (see the file comment). unsupported when a size does not fit the
// 32-bit index math or more than kCopyMaxDims dims remain after merging.
inline Result<CopyPlan> plan_copy(const StridedCopy& c) {
  using copy_detail::aligned;
  using copy_detail::fits_u32;
  CopyPlan plan;
  plan.esize = c.esize;
  const int64_t numel = shape_numel(c.shape);
  if (numel == 0) return plan;
  // Drop size-1 dims; take out one repeated (source stride 0) dim, unless it is the
  // destination's unit-stride dim (that one stays: its rows read one source element).
  struct Dim {
    int64_t size, src, dst;
  };
  std::vector<Dim> dims;
  int64_t rep = 1, rep_stride = 0;
  for (size_t i = 0; i < c.shape.size(); ++i) {
    if (c.shape[i] == 1) continue;
    if (c.src_strides[i] == 0 && c.dst_strides[i] != 1 && rep == 1) {
      rep = c.shape[i];
      rep_stride = c.dst_strides[i];
      continue;
    }
    dims.push_back({c.shape[i], c.src_strides[i], c.dst_strides[i]});
  }
  // Merge dim i into dim i + 1 where both views step over it as one run.
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& outer = merged.back();
      if (outer.src == d.src * d.size && outer.dst == d.dst * d.size) {
        outer = {outer.size * d.size, d.src, d.dst};
        continue;
      }
    }
    merged.push_back(d);
  }
  if (merged.empty()) merged.push_back({1, 1, 1});
  const int n = static_cast<int>(merged.size());
  if (n > kCopyMaxDims)
    return Status::unsupported("cuda copy: " + std::to_string(n) + " dims remain after merging (at most " +
                               std::to_string(kCopyMaxDims) + ")");
  const Dim last = merged[n - 1];
  for (const Dim& d : merged)
    if (!fits_u32(d.size)) return Status::unsupported("cuda copy: a dim of " + std::to_string(d.size) + " elements exceeds 2^32");
  if (!fits_u32(rep)) return Status::unsupported("cuda copy: repeat count exceeds 2^32");
  const int vec_elems = 16 / c.esize;

  int p = -1;  // the source's unit-stride dim, when it is not the last (the destination's)
  if (last.src != 1 && last.dst == 1)
    for (int i = 0; i < n - 1; ++i)
      if (merged[i].src == 1) p = i;

  // rows: the innermost dim copied as rows, in 16-byte chunks or element by element (also where
  // the destination's unit dim had size 1: a concat of one column, the rows then step by y's).
  if (p < 0) {
    CopyRowsArgs& a = plan.rows;
    a.src = c.src;
    a.dst = c.dst;
    a.outer = n - 1;
    int64_t rows = 1;
    bool vec = last.src == 1 && last.dst == 1 && aligned(c.src, 16) && aligned(c.dst, 16) && rep_stride % vec_elems == 0;
    for (int i = 0; i < n - 1; ++i) {
      a.outer_size[i] = FastDivmod::of(static_cast<uint32_t>(merged[i].size));
      a.src_stride[i] = merged[i].src;
      a.dst_stride[i] = merged[i].dst;
      rows *= merged[i].size;
      vec = vec && merged[i].src % vec_elems == 0 && merged[i].dst % vec_elems == 0;
    }
    const int64_t per_row = ceil_div(last.size, vec_elems);
    if (!fits_u32(per_row * rows))
      return Status::unsupported("cuda copy: " + std::to_string(per_row * rows) + " chunks of 16 bytes exceed 2^32");
    a.chunks_per_row = FastDivmod::of(static_cast<uint32_t>(per_row));
    a.chunks = static_cast<uint32_t>(per_row * rows);
    a.cols = static_cast<uint32_t>(last.size);
    a.src_col_stride = last.src;
    a.dst_col_stride = last.dst;
    a.rep = static_cast<uint32_t>(rep);
    a.rep_stride = rep_stride;
    plan.kind = CopyPlan::Kind::rows;
    plan.vector = vec;
    plan.blocks = static_cast<uint32_t>(ceil_div(a.chunks, int64_t{kCopyThreads} * kCopyUnroll));
    return plan;
  }

  // transpose: p (source unit stride) against the last dim L (destination unit stride).
  CopyTransposeArgs& a = plan.transpose;
  a.src = c.src;
  a.dst = c.dst;
  a.n_l = static_cast<uint32_t>(last.size);
  a.n_p = static_cast<uint32_t>(merged[p].size);
  a.src_stride_l = last.src;
  a.dst_stride_p = merged[p].dst;
  const int64_t tile_cols = 128 / c.esize;
  const int64_t tiles_l = ceil_div(last.size, kCopyTileRows), tiles_p = ceil_div(merged[p].size, tile_cols);
  a.tiles_l = FastDivmod::of(static_cast<uint32_t>(tiles_l));
  a.tiles_p = FastDivmod::of(static_cast<uint32_t>(tiles_p));
  int64_t batch = 1;
  for (int i = 0; i < n - 1; ++i) {
    if (i == p) continue;
    a.batch_size[a.batch] = FastDivmod::of(static_cast<uint32_t>(merged[i].size));
    a.batch_src[a.batch] = merged[i].src;
    a.batch_dst[a.batch] = merged[i].dst;
    ++a.batch;
    batch *= merged[i].size;
  }
  a.rep = static_cast<uint32_t>(rep);
  a.rep_stride = rep_stride;
  const int64_t blocks = tiles_l * tiles_p * batch;
  if (blocks > INT32_MAX) return Status::unsupported("cuda copy: " + std::to_string(blocks) + " transpose tiles exceed one launch");
  plan.kind = CopyPlan::Kind::transpose;
  plan.blocks = static_cast<uint32_t>(blocks);
  // Widest access both sides allow: every stride the accesses step by, and both bases, aligned.
  plan.width = 1;
  for (int bytes : {16, 8}) {
    const int w = bytes / c.esize;
    bool ok = aligned(c.src, bytes) && aligned(c.dst, bytes) && last.src % w == 0 && merged[p].dst % w == 0 &&
              rep_stride % w == 0;
    for (int i = 0; i < a.batch; ++i) ok = ok && a.batch_src[i] % w == 0 && a.batch_dst[i] % w == 0;
    if (ok) {
      plan.width = w;
      break;
    }
  }
  return plan;
}

template <typename E>
Status launch_copy_plan(const CudaDevice& device, const CopyPlan& plan) {
  constexpr int kWide = 16 / static_cast<int>(sizeof(E)), kHalf = 8 / static_cast<int>(sizeof(E));
  const cudaStream_t s = device.stream();
  if (plan.kind == CopyPlan::Kind::rows) {
    if (plan.vector) {
      copy_rows_kernel<E, true><<<plan.blocks, kCopyThreads, 0, s>>>(plan.rows);
    } else {
      copy_rows_kernel<E, false><<<plan.blocks, kCopyThreads, 0, s>>>(plan.rows);
    }
  } else if (plan.width == kWide) {
    copy_transpose_kernel<E, kWide><<<plan.blocks, kCopyThreads, 0, s>>>(plan.transpose);
  } else if (plan.width == kHalf) {
    copy_transpose_kernel<E, kHalf><<<plan.blocks, kCopyThreads, 0, s>>>(plan.transpose);
  } else {
    copy_transpose_kernel<E, 1><<<plan.blocks, kCopyThreads, 0, s>>>(plan.transpose);
  }
  DNNB_CUDA_CHECK_LAUNCH();
  return Status::ok();
}

// Plans and launches one copy on the device's stream (no synchronisation).
inline Status launch_copy(const CudaDevice& device, const StridedCopy& c) {
  auto plan = plan_copy(c);
  if (!plan) return plan.status();
  if (plan->kind == CopyPlan::Kind::empty) return Status::ok();
  return c.esize == 4 ? launch_copy_plan<uint32_t>(device, *plan) : launch_copy_plan<uint16_t>(device, *plan);
}

// Copies the view `src` into the view `dst` (same dtype and shape; dst a view of a contiguous
// tensor); `what` names the op in errors.
inline Status copy_view(const CudaDevice& device, const Tensor& src, const Tensor& dst, const char* what) {
  auto c = strided_copy(src, dst, what);
  if (!c) return c.status();
  return launch_copy(device, *c);
}

// The device of a layout op's call, with its operands checked: `inputs` and one output, all of
// the problem's dtype with device buffers; the output contiguous (it may sit at an offset).
inline Result<const CudaDevice*> layout_call_device(OpCall& call, std::initializer_list<const char*> inputs) {
  auto device = cuda_device_of(call);
  if (!device) return device.status();
  if (call.inputs.size() != inputs.size() || call.outputs.size() != 1)
    return Status::bad_input("cuda " + call.problem.op + ": expected " + std::to_string(inputs.size()) +
                             " inputs and 1 output");
  size_t i = 0;
  for (const char* name : inputs) DNNB_TRY(expect_tensor(call.inputs[i++], call.problem.dtype, name));
  DNNB_TRY(expect_tensor(call.outputs[0], call.problem.dtype, "y"));
  if (!call.outputs[0].is_contiguous())
    return Status::unsupported("cuda " + call.problem.op + " writes a contiguous y, got " + call.outputs[0].describe());
  return device;
}

}  // namespace dnnb::cuda_kernels::layout
