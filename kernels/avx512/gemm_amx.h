// The AMX path of the GEMM engine (gemm_tile.h): a and b both bf16, on CPUs with AMX_BF16
// whose OS grants the tile state (has_amx_bf16). The engine's blocking, threads, bias and
// output rounding are the other paths'; this path packs, and multiplies a 32 x 32 block of y
// per call in tiles:
//
//   tmm0 tmm1   y: rows 0-15 x columns 0-15 and 16-31 (f32 sums, 16 x 16 each)
//   tmm2 tmm3   y: rows 16-31 x columns 0-15 and 16-31
//   tmm4 tmm5   a: rows 0-15 and 16-31, 16 pair words (32 K steps) per row
//   tmm6 tmm7   b: 16 pair steps (32 K steps) of columns 0-15 and 16-31, a pair word each
//   per 32 K steps: tmm0 += tmm4 tmm6, tmm1 += tmm4 tmm7, tmm2 += tmm5 tmm6, tmm3 += tmm5 tmm7
//
// Every tile is 16 rows x 64 bytes (one configuration, loaded per thread's block): tails are
// zero-padded packs, never partial tiles. K is packed to a multiple of 16 pair words (32 K
// steps; Path::word_align), the rows of a to a multiple of 32, the columns of b to 32.
//
// Packed b is the bf16 pairs path's (pack_b_pairs): each pair step of a 32-column panel is 32
// words (128 bytes), columns 0-15 then 16-31, so tmm6 and tmm7 load 16 steps at a stride of
// 128 bytes from the panel and from 64 bytes into it. Packed a is row-major within tiles: a
// 32-row panel holds, for each chunk of 16 words, rows 0-15 (16 x 16 words, 1 KiB) then rows
// 16-31, so each A tile is one contiguous KiB at a stride of 64 bytes.
//
// Subnormals: TDPBF16PS treats input subnormals as zero and flushes subnormal results to zero,
// rounding each accumulation to nearest even, ignoring MXCSR (Intel SDM, TDPBF16PS), as
// VDPBF16PS does; variant fma (bf16 converted to f32, FMA) avoids both.
//
// The kernel is a template over the tile instructions (HwTiles below: devices/cpu/amx_tiles.h)
// so that tests/test_avx512_amx.cpp can run the same packing, indexing and blocking on an
// emulation of them on a CPU without AMX.
#pragma once
#include "devices/cpu/amx_tiles.h"
#include "kernels/avx512/gemm.h"
#include "kernels/avx512/gemm_tile.h"

#define DNNB_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")))

namespace dnnb::avx512::gemm_detail {

constexpr int kAmxMR = 32;     // rows of a y block: two tiles of 16
constexpr int kAmxChunk = 16;  // pair words per tile row: one K step of the tile kernel
constexpr int kAmxTileWords = amx::kMaxRows * kAmxChunk;  // words of one A tile (1 KiB)
static_assert(kNR == 2 * 16, "b panels are two tiles of 16 columns");

// The one configuration of the path: 8 tiles of 16 rows x 64 bytes.
inline amx::TileConfig amx_gemm_config() { return amx::full_tiles(8); }

// PackA and PackB of the AMX path (gemm_tile.h), in the layout above.
void pack_a_amx(const void* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out);
void pack_b_amx(const void* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel, uint32_t* out);

// A 32 x 32 block of y over `words` pair words (a multiple of kAmxChunk) of one packed panel of
// a and one of b. A whole block (32 rows, 32 columns) whose partial sums live in f32 (y, or the
// engine's buffer for a 16-bit y) loads them into the tiles and, before the last K block,
// stores the tiles back: f32 sums never leave the tiles for zmm. The last K block, and edge
// blocks, store the tiles to the stack and finish through finish_tile (bias, rounding, masks).
template <class Tiles>
DNNB_AMX void amx_tile(int64_t words, const uint32_t* a, const uint32_t* b, const TileOut& t) {
  const bool whole = t.rows == kAmxMR && t.cols == kNR;
  const int64_t c_bytes = t.c_rs * static_cast<int64_t>(sizeof(float));
  if (whole && t.load_c) {
    Tiles::template load<0>(t.c, c_bytes);
    Tiles::template load<1>(t.c + 16, c_bytes);
    Tiles::template load<2>(t.c + 16 * t.c_rs, c_bytes);
    Tiles::template load<3>(t.c + 16 * t.c_rs + 16, c_bytes);
  } else {
    Tiles::template zero<0>();
    Tiles::template zero<1>();
    Tiles::template zero<2>();
    Tiles::template zero<3>();
  }
  constexpr int64_t kBStride = kNR * sizeof(uint32_t);  // bytes between pair steps of a b panel
  for (int64_t w = 0; w < words; w += kAmxChunk) {
    Tiles::template load<4>(a, kAmxChunk * sizeof(uint32_t));
    Tiles::template load<5>(a + kAmxTileWords, kAmxChunk * sizeof(uint32_t));
    Tiles::template load<6>(b, kBStride);
    Tiles::template load<7>(b + 16, kBStride);
    Tiles::template dpbf16ps<0, 4, 6>();
    Tiles::template dpbf16ps<1, 4, 7>();
    Tiles::template dpbf16ps<2, 5, 6>();
    Tiles::template dpbf16ps<3, 5, 7>();
    a += 2 * kAmxTileWords;
    b += kAmxChunk * kNR;
  }
  if (whole && !t.final) {
    Tiles::template store<0>(t.c, c_bytes);
    Tiles::template store<1>(t.c + 16, c_bytes);
    Tiles::template store<2>(t.c + 16 * t.c_rs, c_bytes);
    Tiles::template store<3>(t.c + 16 * t.c_rs + 16, c_bytes);
    return;
  }
  // Row i of the block is acc[i][0..1]: 32 floats, 128 bytes.
  __m512 acc[kAmxMR][2];
  float* s = reinterpret_cast<float*>(acc);
  constexpr int64_t kAccBytes = kNR * sizeof(float);
  Tiles::template store<0>(s, kAccBytes);
  Tiles::template store<1>(s + 16, kAccBytes);
  Tiles::template store<2>(s + 16 * kNR, kAccBytes);
  Tiles::template store<3>(s + 16 * kNR + 16, kAccBytes);
  TileOut out = t;
  if (whole) out.load_c = false;  // the earlier K blocks' sums were loaded into the tiles
  finish_tile<kAmxMR>(acc, out);
}

template <class Tiles>
void amx_enter() {
  static const amx::TileConfig config = amx_gemm_config();
  Tiles::load_config(config);
}

// The path on the tile instructions of `Tiles`.
template <class Tiles>
Path amx_path_of() {
  Path path;
  path.k_per_word = 2;
  path.kc = 512;  // 256 pair words: a b panel is 32 KiB (L1), a 32-row panel of a 32 KiB
  path.mr = kAmxMR;
  path.word_align = kAmxChunk;
  path.pack_a = &pack_a_amx;
  path.pack_b = &pack_b_amx;
  path.tile = &amx_tile<Tiles>;
  path.enter = &amx_enter<Tiles>;
  path.leave = &Tiles::release;
  return path;
}

// The hardware's tile instructions.
struct HwTiles {
  static void load_config(const amx::TileConfig& config) { amx::load_config(config); }
  static void release() { amx::release(); }
  template <int T>
  static void zero() { amx::zero<T>(); }
  template <int T>
  static void load(const void* base, int64_t stride) { amx::load<T>(base, stride); }
  template <int T>
  static void store(void* base, int64_t stride) { amx::store<T>(base, stride); }
  template <int C, int A, int B>
  static void dpbf16ps() { amx::dpbf16ps<C, A, B>(); }
};

// The engine on a given path, after gemm()'s checks; gemm() picks the path (tests run the AMX
// path on an emulation of the tiles). a and b must be what the path packs (bf16 for AMX).
Status gemm_with_path(const GemmCall& g, const Path& path);

}  // namespace dnnb::avx512::gemm_detail
