// Internals of the GEMM engine (gemm.h) shared by its two packed paths: f32 values
// (gemm.cpp: any input format converted while packing, FMA) and bf16 pairs (gemm_bf16.cpp:
// VDPBF16PS). Packed panels hold 32-bit words: one f32 value per K step, or two bf16 values
// of consecutive K steps (the lower K in the low half). A panel of a is kMR words per word
// step, a panel of b kNR words (64-byte aligned); a tile keeps kMR x kNR f32 sums in zmm.
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

// `rows` rows (at most a task's) and kc K steps of a, from element (0, 0), into panels of kMR
// rows: panel q at out + q * words * kMR (words = K steps / k_per_word, rounded up), zero past
// `rows` and past kc.
using PackA = void (*)(const void* a, int64_t rs, int64_t cs, int64_t rows, int64_t kc, uint32_t* out);
// Panel `panel` (columns [32 panel, 32 panel + 32) of `cols`) of a kc x cols block of b, to
// out (words x kNR), zero past `cols` and past kc.
using PackB = void (*)(const void* b, int64_t rs, int64_t cs, int64_t kc, int64_t cols, int64_t panel, uint32_t* out);
// One tile over `words` word steps of packed panels, stored through TileOut.
using TileFn = void (*)(int64_t words, const uint32_t* a, const uint32_t* b, const TileOut& t);

struct Path {
  int k_per_word = 1;
  int64_t kc = 256;  // K block, in K steps
  PackA pack_a = nullptr;
  PackB pack_b = nullptr;
  TileFn tile = nullptr;
};

// f32 words: a and b of any of f32, f16, bf16 (converted exactly while packing), FMA.
Path f32_path(DType a, DType b);
// bf16 pairs: a and b both bf16, VDPBF16PS (CPUs with AVX512_BF16 only).
Path bf16_pairs_path();

}  // namespace dnnb::avx512::gemm_detail
