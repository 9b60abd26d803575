// The AMX path of the GEMM engine: its packing and the hardware instance of its tile kernel
// (layout, tiles and subnormals: gemm_amx.h). Compiled for the baseline ISA like every
// AVX-512 file: the tile instructions sit in DNNB_AMX functions, reached only through
// amx_path(), which gemm() takes only where has_amx_bf16.
#include "kernels/avx512/gemm_amx.h"

#include <cstdlib>
#include <cstring>

#include "devices/cpu/cpu_features.h"
#include "kernels/avx512/transpose16.h"

namespace dnnb::avx512 {

const bool has_amx_bf16 = [] {
  const char* env = std::getenv("DNNB_AVX512_AMX");
  const bool allowed = env == nullptr || std::strcmp(env, "0") != 0;
  return allowed && cpu_features().amx_bf16_usable();
}();

namespace gemm_detail {
namespace {

int64_t padded_words(int64_t kc) { return ((kc + 1) / 2 + kAmxChunk - 1) / kAmxChunk * kAmxChunk; }

}  // namespace

// Rows [r0, r0 + 16) of a (nr of them real, the rest zero) into the 16-row tiles of a panel:
// chunk c of 16 pair words at dst + c * 2 * kAmxTileWords, row i at + i * 16 words.
DNNB_AVX512 void pack_a_amx(const void* src, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out) {
  const uint16_t* a = static_cast<const uint16_t*>(src);
  const int64_t words = (kc + 1) / 2, padded = padded_words(kc), chunks = padded / kAmxChunk;
  const int64_t panel_rows = (rows + kAmxMR - 1) / kAmxMR * kAmxMR;
  for (int64_t r0 = 0; r0 < panel_rows; r0 += 16) {
    const int64_t nr = std::clamp<int64_t>(rows - r0, 0, 16);
    // The 16-row half r0 / 16 % 2 of panel r0 / 32.
    uint32_t* half = out + (r0 / kAmxMR) * kAmxMR * padded + (r0 / 16 % 2) * kAmxTileWords;
    for (int64_t c = 0; c < chunks; ++c) {
      uint32_t* dst = half + c * 2 * kAmxTileWords;
      const int64_t w0 = c * kAmxChunk;
      if (nr == 0) {
        for (int i = 0; i < 16; ++i) _mm512_store_si512(dst + i * 16, _mm512_setzero_si512());
      } else if (cs == 1) {
        // Row-major: a row's 32 values of the chunk are its 16 pair words already.
        const __mmask32 m = mask32(kc - 2 * w0);
        for (int64_t i = 0; i < 16; ++i) {
          const __m512i v = i < nr && m != 0 ? _mm512_maskz_loadu_epi16(m, a + (r0 + i) * rs + 2 * w0) : _mm512_setzero_si512();
          _mm512_store_si512(dst + i * 16, v);
        }
      } else if (rs == 1) {
        // Column-major: one pair word of 16 consecutive rows per step (a column of the
        // tile), 16 steps transposed to 16 rows.
        __m512 v[16];
        for (int64_t q = 0; q < 16; ++q) {
          const int64_t k = 2 * (w0 + q);
          v[q] = w0 + q < words ? _mm512_castsi512_ps(pair_rows(a + r0 + k * cs, a + r0 + (k + 1) * cs, tail_mask(nr), k + 1 < kc))
                                : _mm512_setzero_ps();
        }
        transpose16x16(v);
        for (int i = 0; i < 16; ++i) _mm512_store_ps(dst + i * 16, v[i]);
      } else {
        for (int64_t i = 0; i < 16; ++i)
          for (int64_t q = 0; q < 16; ++q) {
            const int64_t k = 2 * (w0 + q);
            uint32_t word = 0;
            if (i < nr && k < kc) {
              word = a[(r0 + i) * rs + k * cs];
              if (k + 1 < kc) word |= static_cast<uint32_t>(a[(r0 + i) * rs + (k + 1) * cs]) << 16;
            }
            dst[i * 16 + q] = word;
          }
      }
    }
  }
}

// The bf16 pairs path's panel, then zero pair steps up to the padded K.
void pack_b_amx(const void* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel, uint32_t* out) {
  pack_b_pairs(b, rs, cs, kc, cols, panel, out);
  const int64_t words = (kc + 1) / 2;
  std::memset(out + words * kNR, 0, static_cast<size_t>((padded_words(kc) - words) * kNR) * sizeof(uint32_t));
}

Path amx_path() { return amx_path_of<HwTiles>(); }

}  // namespace gemm_detail
}  // namespace dnnb::avx512
