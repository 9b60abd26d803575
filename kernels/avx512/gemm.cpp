// The GEMM engine (gemm.h): packed panels, a 14 x 32 register tile, cache blocking, threads
// over output blocks. Internals shared with the bf16 pairs and AMX paths: gemm_tile.h.
//
// Threads: the output is cut into one block of rows x columns per thread (plan_grid), and each
// thread computes its block over all of K with its own packing, so threads meet only at the
// end of the product (no barrier per K block: on a busy machine a descheduled thread would hold
// every barrier up). The price is packing shared slices twice: b's columns once per row of the
// grid, a's rows once per column of it, a few percent at the sizes where threads pay.
//
// Blocking within a thread (the GotoBLAS order): columns in blocks of kNC, K in blocks of the
// path's kc; each (column block, K block) slice of b is packed into 32-column panels (one K
// step of a panel: 32 words, 128 bytes), then rows of a in blocks of kMC are packed into 14-row
// panels (K-major: 14 words per step) and multiplied by every panel of b. A 14 x 32 tile lives
// in 28 zmm accumulators; each K step loads two vectors of b and broadcasts 14 words of a (28
// FMAs per 16 loads). A b panel (kc x 32 x 4 bytes = 32 KiB) is reused by every row panel of
// the block from L1/L2, the packed rows of a (up to kMC x kc words, 336 KiB) from L2.
//
// The f32 path (this file) converts while packing: f16 through VCVTPH2PS, bf16 by a 16-bit
// shift (both exact), so its kernel is f32 FMA whatever the storage. Operands of any strides
// are packed: unit column stride (row-major) and unit row stride (column-major, a transposed
// operand) take vector loads, through a 16 x 16 register transpose where the panel's order
// differs from memory's; any other stride is read element by element. Edge panels are padded
// with zeros, so the kernel always runs whole K steps; edge tiles store under masks.
//
// Sums over K blocks: an f32 output is the accumulator itself (each K block after the first
// adds to what is there). A 16-bit output is rounded once, at the last K block: the blocks
// before it accumulate in a per-thread f32 buffer (its rows x kNC), unless K fits one block.
#include "kernels/avx512/gemm.h"

#include <vector>

#include "kernels/avx512/gemm_amx.h"
#include "kernels/avx512/gemm_tile.h"
#include "kernels/avx512/transpose16.h"

namespace dnnb::avx512 {
namespace gemm_detail {
namespace {

template <class Fmt>
DNNB_AVX512 void pack_a(const void* src, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out) {
  using T = typename Fmt::storage;
  const T* a = static_cast<const T*>(src);
  for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
    const int64_t nr = std::min<int64_t>(kMR, rows - r0);
    uint32_t* dst = out + (r0 / kMR) * kc * kMR;
    if (cs == 1) {
      // Row-major: 16 values of each of the panel's rows, transposed to 16 steps of the panel.
      for (int64_t p = 0; p < kc; p += 16) {
        const int64_t kk = std::min<int64_t>(16, kc - p);
        __m512 v[16];
        for (int i = 0; i < 16; ++i)
          v[i] = i < nr ? Fmt::load(a + (r0 + i) * rs + p, tail_mask(kk)) : _mm512_setzero_ps();
        transpose16x16(v);
        for (int64_t q = 0; q < kk; ++q) _mm512_mask_storeu_ps(dst + (p + q) * kMR, kPanelMask, v[q]);
      }
    } else if (rs == 1) {
      // Column-major: a panel step is nr consecutive values.
      for (int64_t p = 0; p < kc; ++p)
        _mm512_mask_storeu_ps(dst + p * kMR, kPanelMask, Fmt::load(a + r0 + p * cs, tail_mask(nr)));
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t i = 0; i < kMR; ++i)
          dst[p * kMR + i] = i < nr ? bits_of(Fmt::to_float(a[(r0 + i) * rs + p * cs])) : 0u;
    }
  }
}

template <class Fmt>
DNNB_AVX512 void pack_b(const void* src, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel,
                        uint32_t* out) {
  using T = typename Fmt::storage;
  const T* b = static_cast<const T*>(src);
  for (int h = 0; h < 2; ++h) {
    const int64_t ch = panel * kNR + 16 * h;
    const int64_t nh = std::clamp<int64_t>(cols - ch, 0, 16);
    uint32_t* dst = out + 16 * h;
    if (nh == 0) {
      for (int64_t p = 0; p < kc; ++p) _mm512_store_ps(dst + p * kNR, _mm512_setzero_ps());
    } else if (cs == 1) {
      for (int64_t p = 0; p < kc; ++p) _mm512_store_ps(dst + p * kNR, Fmt::load(b + p * rs + ch, tail_mask(nh)));
    } else if (rs == 1) {
      // Column-major (a transposed b, linear's w): 16 values down each of 16 columns,
      // transposed to 16 panel steps.
      for (int64_t p = 0; p < kc; p += 16) {
        const int64_t kk = std::min<int64_t>(16, kc - p);
        __m512 v[16];
        for (int j = 0; j < 16; ++j)
          v[j] = j < nh ? Fmt::load(b + (ch + j) * cs + p, tail_mask(kk)) : _mm512_setzero_ps();
        transpose16x16(v);
        for (int64_t q = 0; q < kk; ++q) _mm512_store_ps(dst + (p + q) * kNR, v[q]);
      }
    } else {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < 16; ++j)
          dst[p * kNR + j] = j < nh ? bits_of(Fmt::to_float(b[p * rs + (ch + j) * cs])) : 0u;
    }
  }
}

// An R x 32 tile (R <= kMR) over kc steps of f32 words.
template <int R>
DNNB_AVX512 void tile_kernel(int64_t kc, const uint32_t* a, const uint32_t* b, const TileOut& t) {
  __m512 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
    for (int i = 0; i < R; ++i) {
      const __m512 ai = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(a[i])));
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
    a += kMR;
    b += kNR;
  }
  finish_tile<R>(acc, t);
}

// The smallest kernel that covers the tile's rows: a short edge panel does not pay for 14.
void run_tile(int64_t kc, const uint32_t* a, const uint32_t* b, const TileOut& t) {
  if (t.rows <= 1) return tile_kernel<1>(kc, a, b, t);
  if (t.rows <= 2) return tile_kernel<2>(kc, a, b, t);
  if (t.rows <= 4) return tile_kernel<4>(kc, a, b, t);
  if (t.rows <= 8) return tile_kernel<8>(kc, a, b, t);
  return tile_kernel<kMR>(kc, a, b, t);
}

template <class Fmt>
void pack_a_of(const void* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out) {
  pack_a<Fmt>(a, rs, cs, rows, kc, out);
}
template <class Fmt>
void pack_b_of(const void* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel, uint32_t* out) {
  pack_b<Fmt>(b, rs, cs, kc, cols, panel, out);
}

}  // namespace

Path f32_path(DType a, DType b) {
  Path path;
  path.k_per_word = 1;
  path.kc = 256;  // a b panel: 256 x 32 x 4 bytes = 32 KiB
  path.pack_a = a == DType::f16 ? &pack_a_of<F16> : a == DType::bf16 ? &pack_a_of<BF16> : &pack_a_of<F32>;
  path.pack_b = b == DType::f16 ? &pack_b_of<F16> : b == DType::bf16 ? &pack_b_of<BF16> : &pack_b_of<F32>;
  path.tile = &run_tile;
  return path;
}

}  // namespace gemm_detail

namespace {

using namespace gemm_detail;

constexpr int64_t kMC = 336;   // rows of a packed at a time: 336 x 256 words x 4 bytes = 336 KiB
                               // (rounded down to a multiple of the path's mr)
constexpr int64_t kNC = 1024;  // columns of b packed at a time: 256 x 1024 x 4 bytes = 1 MiB

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

template <class T>
T* align64(T* p) {
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(p) + 63) & ~static_cast<uintptr_t>(63));
}

const char* element(const void* base, DType dtype, int64_t index) {
  return static_cast<const char*>(base) + index * static_cast<int64_t>(dtype_size(dtype));
}

bool float_format(DType d) { return d == DType::f32 || d == DType::f16 || d == DType::bf16; }

// How the output is cut among threads: a grid of tm x tn blocks, one per thread. Of the
// factorisations of the thread count, the one with the least time per K step for the largest
// block: its tiles (rows x columns / 16 FMAs) plus its packing (rows + columns, about one
// cycle each), so a small M splits the columns and a small N the rows.
struct Grid {
  int64_t tm = 1, tn = 1, mb = 0, nb = 0;  // blocks of mb rows (multiple of mr) and nb columns
};
Grid plan_grid(int64_t M, int64_t N, int64_t threads, int64_t mr) {
  Grid best;
  double best_cost = -1;
  for (int64_t tm = 1; tm <= threads; ++tm) {
    if (threads % tm != 0) continue;
    Grid g;
    g.tm = tm;
    g.tn = threads / tm;
    g.mb = round_up(ceil_div(M, g.tm), mr);
    g.nb = round_up(ceil_div(N, g.tn), kNR);
    const double cost = static_cast<double>(g.mb) * static_cast<double>(g.nb) / 16.0 + static_cast<double>(g.mb + g.nb);
    if (best_cost < 0 || cost < best_cost) {
      best = g;
      best_cost = cost;
    }
  }
  best.tm = ceil_div(M, best.mb);
  best.tn = ceil_div(N, best.nb);
  return best;
}

// One thread's block of one batch item: rows [i0, i1) x columns [j0, j1) over all of K, its
// own packing (no barrier between threads until the end of the product).
struct Block {
  const GemmCall* g;
  const Path* path;
  const void* a;  // this batch item's a, b and y
  const void* b;
  char* y;
  const float* bias;  // f32 copy of the bias, or null
  int64_t i0, i1, j0, j1;
};

void run_block(const Block& blk) {
  const GemmCall& g = *blk.g;
  const Path& path = *blk.path;
  const int64_t K = g.k;
  const bool y_f32 = g.y_dtype == DType::f32;
  const int64_t y_bytes = static_cast<int64_t>(dtype_size(g.y_dtype));
  const int64_t mr = path.mr, mc = kMC / mr * mr;
  // Packed K of a K block: its words, padded to the path's word_align.
  auto words_of = [&](int64_t kc) { return round_up(ceil_div(kc, path.k_per_word), path.word_align); };
  const int64_t words_max = words_of(std::min(K, path.kc));
  const int64_t nc_max = std::min(round_up(blk.j1 - blk.j0, kNR), kNC);
  const int64_t mc_max = std::min(round_up(blk.i1 - blk.i0, mr), mc);
  uint32_t* apack = align64(scratch<uint32_t>(0, mc_max * words_max + 16));
  uint32_t* bpack = align64(scratch<uint32_t>(1, nc_max * words_max + 16));
  // Partial sums of a 16-bit output across K blocks: the block's rows x one column block.
  float* cbuf = !y_f32 && K > path.kc ? align64(scratch<float>(2, (blk.i1 - blk.i0) * nc_max + 16)) : nullptr;
  if (path.enter) path.enter();
  for (int64_t jc = blk.j0; jc < blk.j1; jc += kNC) {
    const int64_t nc = std::min(kNC, blk.j1 - jc), panels = ceil_div(nc, kNR);
    for (int64_t pc = 0; pc < K; pc += path.kc) {
      const int64_t kc = std::min(path.kc, K - pc), words = words_of(kc);
      const void* b_block = element(blk.b, g.b.dtype, pc * g.b.row_stride + jc * g.b.col_stride);
      for (int64_t q = 0; q < panels; ++q)
        path.pack_b(b_block, g.b.row_stride, g.b.col_stride, kc, nc, q, bpack + q * words * kNR);
      for (int64_t ic = blk.i0; ic < blk.i1; ic += mc) {
        const int64_t rows = std::min(mc, blk.i1 - ic);
        path.pack_a(element(blk.a, g.a.dtype, ic * g.a.row_stride + pc * g.a.col_stride), g.a.row_stride,
                    g.a.col_stride, rows, kc, apack);
        for (int64_t q = 0; q < panels; ++q) {
          const int64_t j = jc + q * kNR;  // the tile's first column in y
          TileOut t;
          t.cols = static_cast<int>(std::min<int64_t>(kNR, blk.j1 - j));
          t.load_c = pc > 0;
          t.final = pc + kc == K;
          t.y_dtype = g.y_dtype;
          t.y_rs = g.y_row_stride;
          t.bias = blk.bias ? blk.bias + j : nullptr;
          for (int64_t r = 0; r < rows; r += mr) {
            const int64_t i = ic + r;
            t.rows = static_cast<int>(std::min<int64_t>(mr, rows - r));
            t.y = blk.y + (i * g.y_row_stride + j) * y_bytes;
            if (y_f32) {
              t.c = static_cast<float*>(t.y);
              t.c_rs = g.y_row_stride;
            } else if (cbuf) {
              t.c = cbuf + (i - blk.i0) * nc_max + (j - jc);
              t.c_rs = nc_max;
            }
            path.tile(words, apack + r * words, bpack + q * words * kNR, t);
          }
        }
      }
    }
  }
  if (path.leave) path.leave();
}

Status check_call(const GemmCall& g) {
  if (!float_format(g.a.dtype) || !float_format(g.b.dtype) || !float_format(g.y_dtype) ||
      (g.bias && !float_format(g.bias_dtype)))
    return Status::unsupported("avx512 gemm: operands must be f32, f16 or bf16");
  if (g.a.data == nullptr || g.b.data == nullptr || g.y == nullptr)
    return Status::bad_input("avx512 gemm: an operand is not in host memory");
  return Status::ok();
}

}  // namespace

MatrixView matrix_view(const Tensor& t, bool transposed) {
  MatrixView v;
  v.data = t.host_data();
  v.dtype = t.dtype;
  const int n = t.ndim();
  int64_t rs = n >= 2 ? t.strides[n - 2] : 0, cs = n >= 1 ? t.strides[n - 1] : 1;
  if (transposed) std::swap(rs, cs);
  v.row_stride = rs;
  v.col_stride = cs;
  v.batch_stride = n >= 3 ? t.strides[n - 3] : 0;
  return v;
}

Status gemm(const GemmCall& g) {
  DNNB_TRY(check_call(g));
  const bool pairs = g.bf16_pairs && has_native_bf16 && g.a.dtype == DType::bf16 && g.b.dtype == DType::bf16;
  const Path path = pairs && g.amx && has_amx_bf16 ? amx_path() : pairs ? bf16_pairs_path() : f32_path(g.a.dtype, g.b.dtype);
  return gemm_detail::gemm_with_path(g, path);
}

Status gemm_detail::gemm_with_path(const GemmCall& g, const Path& path) {
  DNNB_TRY(check_call(g));
  std::vector<float> bias;
  if (g.bias) {
    bias.resize(static_cast<size_t>(g.n));
    for (int64_t j = 0; j < g.n; ++j)
      bias[j] = static_cast<float>(load_element(g.bias, g.bias_dtype, j * g.bias_stride));
  }
  // One block per thread and batch item; a product too small to share runs on this thread.
  const int64_t work = g.batch * g.m * g.n * g.k;
  const int64_t threads = work >= (int64_t{1} << 18) ? max_threads() : 1;
  const Grid grid = plan_grid(g.m, g.n, threads, path.mr);
  const int64_t per_item = grid.tm * grid.tn;
  const int64_t y_bytes = static_cast<int64_t>(dtype_size(g.y_dtype));
  parallel_tasks(g.batch * per_item, threads > 1 ? work : 0, [&](int64_t task) {
    const int64_t bi = task / per_item, cell = task % per_item;
    Block blk{&g, &path, element(g.a.data, g.a.dtype, bi * g.a.batch_stride),
              element(g.b.data, g.b.dtype, bi * g.b.batch_stride), static_cast<char*>(g.y) + bi * g.y_batch_stride * y_bytes,
              g.bias ? bias.data() : nullptr, 0, 0, 0, 0};
    blk.i0 = (cell / grid.tn) * grid.mb;
    blk.i1 = std::min(g.m, blk.i0 + grid.mb);
    blk.j0 = (cell % grid.tn) * grid.nb;
    blk.j1 = std::min(g.n, blk.j0 + grid.nb);
    if (blk.i0 < blk.i1 && blk.j0 < blk.j1) run_block(blk);
  });
  return Status::ok();
}

}  // namespace dnnb::avx512
