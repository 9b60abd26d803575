// Internals of the GEMM engine (gemm.h) shared by its packed paths: f32 values (gemm.cpp:
// any input format converted while packing, FMA), bf16 pairs (gemm_bf16.cpp: VDPBF16PS) and
// AMX (gemm_amx.cpp: bf16 pairs in TDPBF16PS tiles). Packed panels hold 32-bit words: one f32
// value per K step, or two bf16 values of consecutive K steps (the lower K in the low half). A
// panel of b is kNR words per word step (64-byte aligned), for every path; a panel of a is
// Path::mr rows (kMR words per word step for the zmm paths; gemm_amx.h for AMX's). The zmm
// paths keep a kMR x kNR tile of f32 sums in registers, AMX a 32 x kNR block in four tiles.
#pragma once
#include <cstring>

#include "kernels/avx512/avx512_common.h"

namespace dnnb::avx512::gemm_detail {

constexpr int kMR = 14;  // rows of a tile (and of a packed panel of a)
constexpr int kNR = 32;  // columns of a tile (two zmm)
constexpr __mmask16 kPanelMask = static_cast<__mmask16>((1u << kMR) - 1u);

inline uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// Where a tile's sums go. Before the last K block: f32 partial sums at c (row stride c_rs),
// added to what is there when load_c. At the last: (those partial sums +) the tile's sums
// + bias, rounded to y's dtype.
struct TileOut {
  float* c = nullptr;
  int64_t c_rs = 0;
  bool load_c = false;
  bool final = false;
  void* y = nullptr;
  DType y_dtype = DType::f32;
  int64_t y_rs = 0;
  const float* bias = nullptr;  // at the tile's first column, or null
  int rows = 0, cols = 0;
};

DNNB_AVX512_INLINE void store_row(DType dtype, void* row, __m512 v0, __m512 v1, __mmask16 m0, __mmask16 m1) {
  switch (dtype) {
    case DType::f16: {
      auto* p = static_cast<uint16_t*>(row);
      F16::store(p, v0, m0);
      F16::store(p + 16, v1, m1);
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<uint16_t*>(row);
      BF16::store(p, v0, m0);
      BF16::store(p + 16, v1, m1);
      break;
    }
    default: {
      auto* p = static_cast<float*>(row);
      _mm512_mask_storeu_ps(p, m0, v0);
      _mm512_mask_storeu_ps(p + 16, m1, v1);
    }
  }
}

// Stores the first t.rows rows and t.cols columns of an R x 32 tile of sums (TileOut).
template <int R>
DNNB_AVX512_INLINE void finish_tile(__m512 (&acc)[R][2], const TileOut& t) {
  const __mmask16 m0 = tail_mask(std::min(t.cols, 16)), m1 = t.cols > 16 ? tail_mask(t.cols - 16) : 0;
  const __m512 bias0 = t.bias ? _mm512_maskz_loadu_ps(m0, t.bias) : _mm512_setzero_ps();
  const __m512 bias1 = t.bias ? _mm512_maskz_loadu_ps(m1, t.bias + 16) : _mm512_setzero_ps();
  const int64_t y_bytes = static_cast<int64_t>(dtype_size(t.y_dtype));
  for (int i = 0; i < R && i < t.rows; ++i) {
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    float* c = t.c + i * t.c_rs;
    if (t.load_c) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, c));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, c + 16));
    }
    if (!t.final) {
      _mm512_mask_storeu_ps(c, m0, v0);
      _mm512_mask_storeu_ps(c + 16, m1, v1);
    } else {
      store_row(t.y_dtype, static_cast<char*>(t.y) + i * t.y_rs * y_bytes, _mm512_add_ps(v0, bias0),
                _mm512_add_ps(v1, bias1), m0, m1);
    }
  }
}

// `rows` rows (at most a task's) and kc K steps of a, from element (0, 0), into panels of
// Path::mr rows: panel q at out + q * words * mr (words = K steps / k_per_word, rounded up to
// Path::word_align), zero past `rows` (up to a whole panel) and past kc.
using PackA = void (*)(const void* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out);
// Panel `panel` (columns [32 panel, 32 panel + 32) of `cols`) of a kc x cols block of b, to
// out (words x kNR, words as above), zero past `cols` and past kc.
using PackB = void (*)(const void* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel, uint32_t* out);
// One tile over `words` word steps of packed panels, stored through TileOut.
using TileFn = void (*)(int64_t words, const uint32_t* a, const uint32_t* b, const TileOut& t);

struct Path {
  int k_per_word = 1;
  int64_t kc = 256;     // K block, in K steps
  int mr = kMR;         // rows of a panel of a, and the most rows one tile call stores
  int word_align = 1;   // packed K (in words) is padded with zeros to a multiple of this
  PackA pack_a = nullptr;
  PackB pack_b = nullptr;
  TileFn tile = nullptr;
  // Called by the thread that runs a block of y, before its first tile and after its last
  // (AMX: LDTILECFG and TILERELEASE); null for none.
  void (*enter)() = nullptr;
  void (*leave)() = nullptr;
};

// f32 words: a and b of any of f32, f16, bf16 (converted exactly while packing), FMA.
Path f32_path(DType a, DType b);
// bf16 pairs: a and b both bf16, VDPBF16PS (CPUs with AVX512_BF16 only).
Path bf16_pairs_path();
// AMX: a and b both bf16, TDPBF16PS (CPUs with AMX_BF16 and the OS permission only).
Path amx_path();

// The bf16 pairs path's packing of b (gemm_bf16.cpp), which the AMX path shares.
void pack_b_pairs(const void* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel, uint32_t* out);

// A mask of the first n of 32 lanes (n <= 0: none).
inline __mmask32 mask32(int64_t n) {
  return static_cast<__mmask32>(n >= 32 ? 0xffffffffu : n <= 0 ? 0u : (1u << n) - 1u);
}

// 16 values of row k and of row k + 1 (zero when !has_hi) as 16 pair words: the lower K in
// the low half.
DNNB_AVX512_INLINE __m512i pair_rows(const uint16_t* lo, const uint16_t* hi, __mmask16 m, bool has_hi) {
  const __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo));
  if (!has_hi) return l;
  const __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi));
  return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}

}  // namespace dnnb::avx512::gemm_detail
