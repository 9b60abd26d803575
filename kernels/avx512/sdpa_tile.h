// What the AVX-512 attention kernels (sdpa.cpp, sdpa_bwd.cpp) share: strided views of the
// operands, f32 packing of rows (straight or transposed), the small f32 GEMM that every
// product of a (query block, key block) pair runs, and the score finish (softcap, additive
// mask, causal/window visibility).
//
// Blocks are 64 queries by 64 keys. Every operand is packed into f32 scratch once per task or
// per block, so the products read one layout whatever the dtype and strides: rows padded with
// zeros to a multiple of 16 columns, transposed panels 64 lanes wide (zeros past the block's
// end). A product C (+)= A B broadcasts elements of A (any two strides: row-major, or a score
// block read transposed) against 16-lane vectors of B's rows.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/avx512/avx512_math.h"
#include "suites/ops/sdpa_desc.h"

namespace dnnb::avx512::sdpa {

constexpr int64_t kBlock = 64;  // queries or keys per block: 4 vectors of 16 lanes
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

// A host tensor of up to 4 dims addressed by its element strides (a view: padded or transposed
// layouts are read in place). Element (a, b, c, e) of a 4-d tensor is at
// base + a s[0] + b s[1] + c s[2] + e s[3]; shorter tensors leave the leading strides 0.
struct View {
  char* base = nullptr;
  int64_t s[4] = {0, 0, 0, 0};
  int64_t esize = 0;
  // The row (a, b, c) as a typed pointer; its elements are col_stride() apart.
  template <class T>
  T* row(int64_t a, int64_t b, int64_t c) const {
    return reinterpret_cast<T*>(base + (a * s[0] + b * s[1] + c * s[2]) * esize);
  }
  int64_t col_stride() const { return s[3]; }
};

inline View view_of(const Tensor& t) {
  View v;
  v.base = static_cast<char*>(t.host_data());
  v.esize = static_cast<int64_t>(dtype_size(t.dtype));
  const int n = t.ndim();
  for (int i = 0; i < n && i < 4; ++i) v.s[4 - n + i] = t.strides[i];
  return v;
}

// The operands forward and backward both take: the descriptor, q, k, v and the optional mask.
struct Inputs {
  ops::SdpaDesc d;
  View q, k, v, mask;
};

// Binds d and the views of q, k, v[, mask] (the first inputs of call); returns the index of
// the next input.
inline size_t bind_inputs(const OpCall& call, const ops::SdpaDesc& d, Inputs& x) {
  x.d = d;
  size_t i = 0;
  for (View* v : {&x.q, &x.k, &x.v}) *v = view_of(call.inputs[i++]);
  if (d.mask) x.mask = view_of(call.inputs[i++]);
  return i;
}

// The sizes of a task over the queries [i0, i0 + 64) of head h: the queries in the block, their
// 16-lane vectors, the kv head, and D and Dv padded to 16.
struct QueryBlock {
  int64_t nq, nvq, kvh, dp, dvp;
};
inline QueryBlock query_block(const ops::SdpaDesc& d, int64_t h, int64_t i0) {
  const int64_t nq = std::min(kBlock, d.sq - i0);
  return {nq, (nq + 15) / 16, h / d.group(), pad16(d.d), pad16(d.dv)};
}

// Per-thread f32 scratch, carved into 64-byte aligned pieces; reset once per task.
class Arena {
 public:
  static Arena& local() {
    thread_local Arena arena;
    return arena;
  }
  // Reserves `floats` in total for the pieces taken until the next reset.
  void reset(int64_t floats) {
    const size_t need = static_cast<size_t>(floats) + 16 * kPieces;
    if (buf_.size() < need) buf_.assign(need, 0.0f);
    used_ = 0;
  }
  float* take(int64_t floats) {
    float* base = buf_.data() + used_;
    const int64_t skip = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(base) % 64) % 64) / 4;
    used_ += skip + floats;
    return base + skip;
  }
  static constexpr int kPieces = 16;  // the most pieces a task takes

 private:
  std::vector<float> buf_;
  int64_t used_ = 0;
};

// n elements of a row (element stride `stride`) times `mul` into dst[0, n), zeros in
// dst[n, padded).
template <class Fmt>
DNNB_AVX512 void load_row(const typename Fmt::storage* p, int64_t stride, int64_t n, float mul, float* dst,
                          int64_t padded) {
  const __m512 m = _mm512_set1_ps(mul);
  if (stride == 1) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_mul_ps(Fmt::load(p + i), m));
    if (i < n) _mm512_storeu_ps(dst + i, _mm512_mul_ps(Fmt::load(p + i, tail_mask(n - i)), m));
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = Fmt::to_float(p[i * stride]) * mul;
  }
  for (int64_t i = n; i < padded; ++i) dst[i] = 0.0f;
}

// Rows r in [0, rows) of a packed f32 matrix (row stride ld) into a panel transposed:
// panel[e * kBlock + r] = src[r * ld + e] for e < cols; lanes r >= rows are zero.
DNNB_AVX512 inline void transpose_into(const float* src, int64_t ld, int64_t rows, int64_t cols, float* panel) {
  if (rows < kBlock)
    for (int64_t e = 0; e < cols; ++e) std::fill(panel + e * kBlock + rows, panel + (e + 1) * kBlock, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; e < cols; ++e) panel[e * kBlock + r] = src[r * ld + e];
}

// Rows [r0, r0 + n) of (b, h) of a view (dim elements each) times `mul` into a transposed
// panel (row r in lane r), through `scratch` (n rows of pad16(dim) floats, row-major).
template <class Fmt>
DNNB_AVX512 void pack_rows_transposed(const View& t, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t dim,
                                      float mul, float* scratch, float* panel) {
  using T = typename Fmt::storage;
  const int64_t ld = pad16(dim);
  for (int64_t i = 0; i < n; ++i) load_row<Fmt>(t.row<const T>(b, h, r0 + i), t.col_stride(), dim, mul, scratch + i * ld, ld);
  transpose_into(scratch, ld, n, dim, panel);
}

// Keys [j0, j0 + kb) of kv head kvh row-major into kf (rows of pad16(D)) and their values
// into vf (rows of pad16(Dv)), zero-padded.
template <class Fmt>
DNNB_AVX512 void load_kv_rows(const Inputs& x, int64_t b, int64_t kvh, int64_t j0, int64_t kb, float* kf, float* vf) {
  using T = typename Fmt::storage;
  const int64_t dp = pad16(x.d.d), dvp = pad16(x.d.dv);
  for (int64_t j = 0; j < kb; ++j) {
    load_row<Fmt>(x.k.row<const T>(b, kvh, j0 + j), x.k.col_stride(), x.d.d, 1.0f, kf + j * dp, dp);
    load_row<Fmt>(x.v.row<const T>(b, kvh, j0 + j), x.v.col_stride(), x.d.dv, 1.0f, vf + j * dvp, dvp);
  }
}

// n f32 values times `mul` to a row of the output (element stride `stride`).
template <class Fmt>
DNNB_AVX512 void store_row(typename Fmt::storage* p, int64_t stride, int64_t n, const float* src, float mul) {
  const __m512 m = _mm512_set1_ps(mul);
  if (stride == 1) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) Fmt::store(p + i, _mm512_mul_ps(_mm512_loadu_ps(src + i), m));
    if (i < n) {
      const __mmask16 t = tail_mask(n - i);
      Fmt::store(p + i, _mm512_mul_ps(_mm512_maskz_loadu_ps(t, src + i), m), t);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) p[i * stride] = Fmt::from_float(src[i] * mul);
  }
}

// ---- C (+)= A B on packed f32 ------------------------------------------------------------

// Rows [0, R) and vectors [0, NV) of C (row stride ldc): C[r][c] (+)= sum_{k < kn}
// A(r, k) B[k][c], A(r, k) = a[r a_row + k a_k], B's rows ldb apart. R x NV accumulators stay
// in registers over the whole k loop (6 x 4 = 24 of the 32, with 4 for B and one broadcast).
template <int R, int NV>
DNNB_AVX512_INLINE void gemm_tile(float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_k, const float* b,
                                  int64_t ldb, int64_t kn, bool accumulate) {
  __m512 acc[R][NV];
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v)
      acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kn; ++k) {
    __m512 bv[NV];
    _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + k * ldb + 16 * v);
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * a_row + k * a_k]);
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) _Pragma("GCC unroll 4") for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

template <int R>
DNNB_AVX512_INLINE void gemm_rows(int nv, float* c, int64_t ldc, const float* a, int64_t a_row, int64_t a_k,
                                  const float* b, int64_t ldb, int64_t kn, bool accumulate) {
  switch (nv) {
    case 4: return gemm_tile<R, 4>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
    case 3: return gemm_tile<R, 3>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
    case 2: return gemm_tile<R, 2>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
    default: return gemm_tile<R, 1>(c, ldc, a, a_row, a_k, b, ldb, kn, accumulate);
  }
}

// C[m x 16 nvec] (+)= A[m x kn] B[kn x 16 nvec]: tiles of 6 rows (2 and 1 for the rest) by 4
// vectors (fewer at the end). B's column band of 64 (kn x 256 bytes) stays in L1/L2 while
// the row tiles sweep it.
DNNB_AVX512 inline void gemm(float* c, int64_t ldc, int64_t m, int64_t nvec, const float* a, int64_t a_row,
                             int64_t a_k, const float* b, int64_t ldb, int64_t kn, bool accumulate) {
  if (kn == 0 && accumulate) return;
  for (int64_t v0 = 0; v0 < nvec; v0 += 4) {
    const int nv = static_cast<int>(std::min<int64_t>(4, nvec - v0));
    float* cv = c + 16 * v0;
    const float* bv = b + 16 * v0;
    int64_t r = 0;
    for (; r + 6 <= m; r += 6) gemm_rows<6>(nv, cv + r * ldc, ldc, a + r * a_row, a_row, a_k, bv, ldb, kn, accumulate);
    for (; r + 2 <= m; r += 2) gemm_rows<2>(nv, cv + r * ldc, ldc, a + r * a_row, a_row, a_k, bv, ldb, kn, accumulate);
    for (; r < m; ++r) gemm_rows<1>(nv, cv + r * ldc, ldc, a + r * a_row, a_row, a_k, bv, ldb, kn, accumulate);
  }
}

// ---- Scores --------------------------------------------------------------------------------

// The 16 lanes idx = first + lane with lo <= idx < hi.
inline __mmask16 range_mask(int64_t first, int64_t lo, int64_t hi) {
  const int64_t a = std::clamp<int64_t>(lo - first, 0, 16), b = std::clamp<int64_t>(hi - first, 0, 16);
  if (b <= a) return 0;
  return static_cast<__mmask16>(((1u << b) - 1u) & ~((1u << a) - 1u));
}

// The keys [lo, hi) that query i sees by causality and window (before the mask input).
inline int64_t first_key(const ops::SdpaDesc& d, int64_t i) { return d.window > 0 ? i - d.window + 1 : 0; }
inline int64_t end_key(const ops::SdpaDesc& d, int64_t i) { return d.causal ? std::min(i + 1, d.sk) : d.sk; }
// The queries [lo, hi) that see key j.
inline int64_t first_query(const ops::SdpaDesc& d, int64_t j) { return d.causal ? j : 0; }
inline int64_t end_query(const ops::SdpaDesc& d, int64_t j) { return d.window > 0 ? std::min(j + d.window, d.sq) : d.sq; }

// The keys that some query of [i0, i1) sees: [key_lo, key_hi) (empty when key_hi <= key_lo).
inline int64_t block_key_lo(const ops::SdpaDesc& d, int64_t i0) { return std::max<int64_t>(0, first_key(d, i0)); }
inline int64_t block_key_hi(const ops::SdpaDesc& d, int64_t i1) { return end_key(d, i1 - 1); }

// The scores' finish after s = (scale q) . k: softcap c tanh(s / c), then the additive mask.
// `dcap` receives the softcap's derivative 1 - tanh^2 (1 without softcap) when not null.
struct ScoreFinish {
  float softcap = 0, inv_softcap = 0;
  explicit ScoreFinish(const ops::SdpaDesc& d)
      : softcap(static_cast<float>(d.softcap)), inv_softcap(d.softcap > 0 ? static_cast<float>(1.0 / d.softcap) : 0.0f) {}
  DNNB_AVX512_INLINE __m512 operator()(__m512 s, const float* mask, __m512* dcap) const {
    if (softcap > 0) {
      const __m512 t = tanh_ps(_mm512_mul_ps(s, _mm512_set1_ps(inv_softcap)));
      s = _mm512_mul_ps(_mm512_set1_ps(softcap), t);
      if (dcap != nullptr) *dcap = _mm512_fnmadd_ps(t, t, _mm512_set1_ps(1.0f));
    } else if (dcap != nullptr) {
      *dcap = _mm512_set1_ps(1.0f);
    }
    return mask != nullptr ? _mm512_add_ps(s, _mm512_loadu_ps(mask)) : s;
  }
};

// The mask input's block [i0, i0 + nq) x [j0, j0 + kb) transposed into f32:
// dst[j * kBlock + i] = mask(i0 + i, j0 + j) (lanes i >= nq zero).
template <class Fmt>
DNNB_AVX512 void pack_mask_transposed(const View& mask, int64_t i0, int64_t nq, int64_t j0, int64_t kb, float* dst) {
  using T = typename Fmt::storage;
  for (int64_t j = 0; j < kb; ++j) std::fill(dst + j * kBlock + nq, dst + (j + 1) * kBlock, 0.0f);
  for (int64_t i = 0; i < nq; ++i) {
    const T* row = mask.row<const T>(0, 0, i0 + i) + j0 * mask.col_stride();
    for (int64_t j = 0; j < kb; ++j) dst[j * kBlock + i] = Fmt::to_float(row[j * mask.col_stride()]);
  }
}

// Every problem sdpa_desc accepts runs (any strides, lengths and head dims); the dtype and the
// device are checked by register_kernel.
inline Status supports_problem(const Problem& p) {
  auto d = ops::sdpa_desc(p);
  return d ? Status::ok() : d.status();
}

}  // namespace dnnb::avx512::sdpa
