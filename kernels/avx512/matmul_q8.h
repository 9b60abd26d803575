// The engine of the 8-bit products (matmul_i8 and matmul_f8, docs/ops-family4.md): y = a @ b
// with a [M, K] and b [K, N] read through their strides, packed once into 32-bit words, then
// multiplied by an 8-row x 32-column register tile over the whole K.
//
//   a packed: row-major, rows padded to a multiple of kQ8MR (zero rows), `words` words a row;
//             word w of row i holds K steps w * kpw .. w * kpw + kpw - 1 of the row.
//   b packed: panels of kQ8NR columns; panel p is `words` steps of kQ8NR words, word (w, j)
//             holding the same K steps of column p * kQ8NR + j (zero past K and past N).
//   tile:     acc[r][h] += broadcast(a word of row r) . b words of columns h*16 .. h*16+15,
//             16 accumulators, two b vectors and one broadcast live: 19 of the 32 zmm.
//
// Kind supplies kpw (K steps a word holds: 4 int8 for VPDPBUSD, 2 bf16 for VDPBF16PS), the
// accumulator type and the dot instruction; the caller packs and finishes (epilogue).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "devices/cpu/amx_tiles.h"
#include "kernels/avx512/avx512_common.h"

#define DNNB_AVX512_Q8 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,fma,f16c")))

namespace dnnb::avx512::q8 {

constexpr int64_t kQ8MR = 8;       // rows of a register tile
constexpr int64_t kQ8NR = 32;      // columns of a register tile (two vectors of 16)
constexpr int64_t kChunkRows = 64; // rows of a task
constexpr int64_t kGroupPanels = 4;// panels of a task (128 columns)

// The packed operands of one product.
struct Packed {
  int64_t m = 0, n = 0, words = 0;
  int64_t rows = 0;    // m rounded up to kQ8MR
  int64_t panels = 0;  // ceil(n / kQ8NR)
  std::vector<uint32_t> a, b;
};

// Packs with `word_a(i, w)` and `word_b(w, j)` (logical indices; only called for w < words
// and inside the matrix), in parallel over rows of a and panels of b. Rows are padded to a
// multiple of row_align, words to a multiple of word_align (zero words: the AMX tiles' depth).
template <class WordA, class WordB>
Packed pack(int64_t m, int64_t n, int64_t words, WordA&& word_a, WordB&& word_b, int64_t row_align = kQ8MR,
            int64_t word_align = 1) {
  Packed p;
  p.m = m;
  p.n = n;
  const int64_t real_words = words;
  words = (words + word_align - 1) / word_align * word_align;
  p.words = words;
  p.rows = (m + row_align - 1) / row_align * row_align;
  p.panels = (n + kQ8NR - 1) / kQ8NR;
  p.a.assign(static_cast<size_t>(p.rows * words), 0u);
  p.b.assign(static_cast<size_t>(p.panels * words * kQ8NR), 0u);
  parallel_tasks(m, m * words, [&](int64_t i) {
    uint32_t* row = p.a.data() + i * words;
    for (int64_t w = 0; w < real_words; ++w) row[w] = word_a(i, w);
  });
  parallel_tasks(p.panels, n * words, [&](int64_t q) {
    uint32_t* panel = p.b.data() + q * words * kQ8NR;
    const int64_t j0 = q * kQ8NR, cols = std::min<int64_t>(kQ8NR, n - j0);
    for (int64_t w = 0; w < real_words; ++w)
      for (int64_t j = 0; j < cols; ++j) panel[w * kQ8NR + j] = word_b(w, j0 + j);
  });
  return p;
}

// One register tile: rows r0 .. r0 + 7 of packed a, panel q of packed b, the whole K.
template <class Kind>
DNNB_AVX512_Q8 inline __attribute__((always_inline)) void tile(const Packed& p, int64_t r0, int64_t q,
                                                               typename Kind::Acc (&acc)[kQ8MR][2]) {
  // Sums in locals, copied out once: with the output array itself as the loop's accumulator
  // GCC kept two copies of every sum and moved them each step.
  typename Kind::Acc c0[kQ8MR], c1[kQ8MR];
#pragma GCC unroll 8
  for (int r = 0; r < kQ8MR; ++r) c0[r] = c1[r] = Kind::zero();
  const uint32_t* a = p.a.data() + r0 * p.words;
  const uint32_t* b = p.b.data() + q * p.words * kQ8NR;
  const int64_t words = p.words;
  for (int64_t w = 0; w < words; ++w) {
    const __m512i b0 = _mm512_loadu_si512(b + w * kQ8NR);
    const __m512i b1 = _mm512_loadu_si512(b + w * kQ8NR + 16);
#pragma GCC unroll 8
    for (int r = 0; r < kQ8MR; ++r) {
      const __m512i av = _mm512_set1_epi32(static_cast<int>(a[r * words + w]));
      c0[r] = Kind::dot(c0[r], av, b0);
      c1[r] = Kind::dot(c1[r], av, b1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kQ8MR; ++r) {
    acc[r][0] = c0[r];
    acc[r][1] = c1[r];
  }
}

// Every tile of the product, over threads: tasks of kChunkRows rows x kGroupPanels panels
// (a task's b panels stay in L2 while its row blocks pass). finish(row, col0, acc, mask)
// stores 16 columns of one row (mask: the columns inside n).
template <class Kind, class Finish>
void multiply(const Packed& p, Finish&& finish) {
  const int64_t chunks = (p.rows + kChunkRows - 1) / kChunkRows;
  const int64_t groups = (p.panels + kGroupPanels - 1) / kGroupPanels;
  const int64_t total = p.m * p.n * std::max<int64_t>(p.words, 1);
  parallel_tasks(chunks * groups, total, [&](int64_t t) DNNB_AVX512_Q8 {
    const int64_t chunk = t / groups, group = t % groups;
    const int64_t q_end = std::min(p.panels, (group + 1) * kGroupPanels);
    const int64_t r_end = std::min(p.rows, (chunk + 1) * kChunkRows);
    for (int64_t q = group * kGroupPanels; q < q_end; ++q)
      for (int64_t r0 = chunk * kChunkRows; r0 < r_end; r0 += kQ8MR) {
        typename Kind::Acc acc[kQ8MR][2];
        tile<Kind>(p, r0, q, acc);
        for (int64_t r = 0; r < kQ8MR && r0 + r < p.m; ++r)
          for (int h = 0; h < 2; ++h) {
            const int64_t j0 = q * kQ8NR + h * 16;
            if (j0 >= p.n) break;
            finish(r0 + r, j0, acc[r][h], tail_mask(std::min<int64_t>(16, p.n - j0)));
          }
      }
  });
}

// ---- AMX-INT8 (TDPBSSD: s8 x s8 -> s32) ----------------------------------------------------
// The packed operands are already tile rows: a tile of a is 16 packed rows of 16 words (64 K
// steps, s8 bytes) at a stride of `words` words; a tile of b is 16 word steps of 16 columns of
// a panel at a stride of kQ8NR words. A block of 32 x 32 of y is four s32 tiles:
//   tmm0 tmm1   y rows 0-15 x columns 0-15 and 16-31     tmm4 tmm5  a rows 0-15, 16-31
//   tmm2 tmm3   y rows 16-31                             tmm6 tmm7  b columns 0-15, 16-31
// So a is packed with rows padded to kAmxRows and words to kAmxWords. Sums of s8 x s8 are
// exact in s32 for the spec's K (no offset, no correction). Tiles is the instruction set
// (hardware in matmul_i8.cpp; a model of it in tests/test_matmul_q8.cpp, for CPUs without AMX).
constexpr int64_t kAmxRows = 32;
constexpr int64_t kAmxWords = 16;

template <class Tiles>
void amx_i8_block(const Packed& p, int64_t r0, int64_t q, int32_t (&c)[kAmxRows][kQ8NR]) {
  Tiles::template zero<0>();
  Tiles::template zero<1>();
  Tiles::template zero<2>();
  Tiles::template zero<3>();
  const uint32_t* a = p.a.data() + r0 * p.words;
  const uint32_t* b = p.b.data() + q * p.words * kQ8NR;
  const int64_t a_stride = p.words * 4, b_stride = kQ8NR * 4;
  for (int64_t w0 = 0; w0 < p.words; w0 += kAmxWords) {
    Tiles::template load<4>(a + w0, a_stride);
    Tiles::template load<5>(a + 16 * p.words + w0, a_stride);
    Tiles::template load<6>(b + w0 * kQ8NR, b_stride);
    Tiles::template load<7>(b + w0 * kQ8NR + 16, b_stride);
    Tiles::template dpbssd<0, 4, 6>();
    Tiles::template dpbssd<1, 4, 7>();
    Tiles::template dpbssd<2, 5, 6>();
    Tiles::template dpbssd<3, 5, 7>();
  }
  Tiles::template store<0>(&c[0][0], b_stride);
  Tiles::template store<1>(&c[0][16], b_stride);
  Tiles::template store<2>(&c[16][0], b_stride);
  Tiles::template store<3>(&c[16][16], b_stride);
}

// Every 32 x 32 block of y on the tiles, over threads (tasks as multiply's); each task loads
// the tile configuration (8 tiles of 16 rows x 64 bytes) and releases it. store(row, col0,
// values, cols) writes `cols` int32 sums of one row.
template <class Tiles, class Store>
void multiply_amx(const Packed& p, Store&& store) {
  const int64_t chunks = (p.rows + kChunkRows - 1) / kChunkRows;
  const int64_t groups = (p.panels + kGroupPanels - 1) / kGroupPanels;
  const int64_t total = p.m * p.n * std::max<int64_t>(p.words, 1);
  parallel_tasks(chunks * groups, total, [&](int64_t t) {
    const int64_t chunk = t / groups, group = t % groups;
    const int64_t q_end = std::min(p.panels, (group + 1) * kGroupPanels);
    const int64_t r_end = std::min(p.rows, (chunk + 1) * kChunkRows);
    static const amx::TileConfig config = amx::full_tiles(8);
    Tiles::load_config(config);
    alignas(64) int32_t c[kAmxRows][kQ8NR];
    for (int64_t q = group * kGroupPanels; q < q_end; ++q)
      for (int64_t r0 = chunk * kChunkRows; r0 < r_end; r0 += kAmxRows) {
        amx_i8_block<Tiles>(p, r0, q, c);
        const int64_t j0 = q * kQ8NR, cols = std::min<int64_t>(kQ8NR, p.n - j0);
        for (int64_t r = 0; r < kAmxRows && r0 + r < p.m; ++r) store(r0 + r, j0, c[r], cols);
      }
    Tiles::release();
  });
}

}  // namespace dnnb::avx512::q8
