// The bf16 pairs path of the GEMM engine (gemm_tile.h): a and b both bf16, on CPUs with
// AVX512_BF16. Packed words hold two bf16 values of consecutive K steps (the lower K in the
// low half), so a step of the tile kernel is two K steps: VDPBF16PS multiplies the 16 pairs of
// a b vector by a broadcast pair of a and adds both products to the f32 sums (the same f32
// accumulation as FMA, two products per instruction). It treats subnormal inputs and
// results as zero (Intel's definition; GemmCall::bf16_pairs = false avoids it).
//
// Packing needs no conversion, only pairing: a row-major a and a column-major b already hold
// each pair as one 32-bit word in memory (16 x 16 word transposes, as the f32 path's), a
// row-major b and a column-major a interleave two K rows (zero-extend one, shift the other).
// An odd K ends with a pair whose upper half is zero in both operands.
#include "kernels/avx512/gemm_tile.h"
#include "kernels/avx512/transpose16.h"

namespace dnnb::avx512::gemm_detail {
namespace {

DNNB_AVX512 void pack_a_pairs(const void* src, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out) {
  const uint16_t* a = static_cast<const uint16_t*>(src);
  const int64_t words = (kc + 1) / 2;
  for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
    const int64_t nr = std::min<int64_t>(kMR, rows - r0);
    uint32_t* dst = out + (r0 / kMR) * words * kMR;
    if (cs == 1) {
      // Row-major: 16 words (32 values) of each row, transposed to 16 panel steps.
      for (int64_t w = 0; w < words; w += 16) {
        const int64_t ww = std::min<int64_t>(16, words - w);
        __m512 v[16];
        for (int i = 0; i < 16; ++i)
          v[i] = i < nr ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask32(kc - 2 * w), a + (r0 + i) * rs + 2 * w))
                        : _mm512_setzero_ps();
        transpose16x16(v);
        for (int64_t q = 0; q < ww; ++q) _mm512_mask_storeu_ps(dst + (w + q) * kMR, kPanelMask, v[q]);
      }
    } else if (rs == 1) {
      for (int64_t w = 0; w < words; ++w) {
        const int64_t k = 2 * w;
        const __m512i v = pair_rows(a + r0 + k * cs, a + r0 + (k + 1) * cs, tail_mask(nr), k + 1 < kc);
        _mm512_mask_storeu_epi32(dst + w * kMR, kPanelMask, v);
      }
    } else {
      for (int64_t w = 0; w < words; ++w)
        for (int64_t i = 0; i < kMR; ++i) {
          const int64_t k = 2 * w;
          uint32_t word = 0;
          if (i < nr) {
            word = a[(r0 + i) * rs + k * cs];
            if (k + 1 < kc) word |= static_cast<uint32_t>(a[(r0 + i) * rs + (k + 1) * cs]) << 16;
          }
          dst[w * kMR + i] = word;
        }
    }
  }
}

}  // namespace

DNNB_AVX512 void pack_b_pairs(const void* src, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel,
                              uint32_t* out) {
  const uint16_t* b = static_cast<const uint16_t*>(src);
  const int64_t words = (kc + 1) / 2;
  for (int h = 0; h < 2; ++h) {
    const int64_t ch = panel * kNR + 16 * h;
    const int64_t nh = std::clamp<int64_t>(cols - ch, 0, 16);
    uint32_t* dst = out + 16 * h;
    if (nh == 0) {
      for (int64_t w = 0; w < words; ++w) _mm512_store_si512(dst + w * kNR, _mm512_setzero_si512());
    } else if (cs == 1) {
      for (int64_t w = 0; w < words; ++w) {
        const int64_t k = 2 * w;
        _mm512_store_si512(dst + w * kNR, pair_rows(b + k * rs + ch, b + (k + 1) * rs + ch, tail_mask(nh), k + 1 < kc));
      }
    } else if (rs == 1) {
      // Column-major (linear's w): each column's pairs are words in memory; 16 x 16 transpose.
      for (int64_t w = 0; w < words; w += 16) {
        const int64_t ww = std::min<int64_t>(16, words - w);
        __m512 v[16];
        for (int j = 0; j < 16; ++j)
          v[j] = j < nh ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask32(kc - 2 * w), b + (ch + j) * cs + 2 * w))
                        : _mm512_setzero_ps();
        transpose16x16(v);
        for (int64_t q = 0; q < ww; ++q) _mm512_store_ps(dst + (w + q) * kNR, v[q]);
      }
    } else {
      for (int64_t w = 0; w < words; ++w)
        for (int64_t j = 0; j < 16; ++j) {
          const int64_t k = 2 * w;
          uint32_t word = 0;
          if (j < nh) {
            word = b[k * rs + (ch + j) * cs];
            if (k + 1 < kc) word |= static_cast<uint32_t>(b[(k + 1) * rs + (ch + j) * cs]) << 16;
          }
          dst[w * kNR + j] = word;
        }
    }
  }
}

namespace {

// An R x 32 tile over `words` pair steps.
template <int R>
DNNB_AVX512 void tile_pairs(int64_t words, const uint32_t* a, const uint32_t* b, const TileOut& t) {
  __m512 acc[R][2];
  for (int i = 0; i < R; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t w = 0; w < words; ++w) {
    const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_load_si512(b));
    const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_load_si512(b + 16));
#pragma GCC unroll 14
    for (int i = 0; i < R; ++i) {
      const __m512bh ai = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(a[i])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    a += kMR;
    b += kNR;
  }
  finish_tile<R>(acc, t);
}

void run_tile_pairs(int64_t words, const uint32_t* a, const uint32_t* b, const TileOut& t) {
  if (t.rows <= 1) return tile_pairs<1>(words, a, b, t);
  if (t.rows <= 2) return tile_pairs<2>(words, a, b, t);
  if (t.rows <= 4) return tile_pairs<4>(words, a, b, t);
  if (t.rows <= 8) return tile_pairs<8>(words, a, b, t);
  return tile_pairs<kMR>(words, a, b, t);
}

}  // namespace

Path bf16_pairs_path() {
  Path path;
  path.k_per_word = 2;
  path.kc = 512;  // 256 pair words: a b panel is 32 KiB, as the f32 path's
  path.pack_a = &pack_a_pairs;
  path.pack_b = &pack_b_pairs;
  path.tile = &run_tile_pairs;
  return path;
}

}  // namespace dnnb::avx512::gemm_detail
