// AVX-512 kv_cache: store one token's k and v per sequence into the caches at pos[b], then
// decode attention of one query row per head against positions 0..pos[b] (suites/ops/
// kv_cache_desc.h; docs/ops-family3.md, "KV cache").
//
// The store (B x KV rows of D per cache) runs first on the calling thread with core/dtype.h's
// scalar conversions and quantize_row, which are the store rule itself (bit-exact with
// reference::store_cache_row). The attention that follows reads the stored row back like every
// other position.
//
// Attention: one task per (sequence b, kv head g, split of positions). A task walks its
// positions in blocks of 32 and serves all the group's query heads from each key and value row
// it reads (GQA: a row is read from memory once per task), decoding it to f32 in registers
// (kv_cache.h; bf16 rows as even and odd columns, one load and one shift or AND per 16; e4m3
// through f16 times its scale, each block first scanned for NaN codes). Per block: the scores
// of up to 4 heads x 4 keys (or 2 x 8, 1 x 8) in register accumulators over D, summed
// horizontally 4 keys at a time (bf16 queries against a bf16 cache: VDPBF16PS on the stored
// pairs, exact products, the scale applied to the sums); the online softmax per head (block
// max, p = e^(s - m), the running sum as 16 lane sums); then O += P V with the accumulators of
// 4 heads x 64 columns (2 x 128, 1 x 128) in registers over the block's positions, rescaled by
// e^(m_old - m_new) when loaded. Scores, p and O are f32; o is rounded once. Positions past
// pos[b] are never read: a key tile past the block's end reads the block's last row again and
// masks its score, and O += P V loops over the block's positions.
// Long sequences are split over positions when B x KV alone would leave threads idle
// (FlashDecoding): each split keeps its own max, sum and O, merged afterwards per head by
// their logsumexp weights. The split count depends on the problem and the thread count only,
// so a run repeated on one machine gives the same bits.
// Gemma 2's attention (softcap=, window=): the block's scores are capped in f32 (c tanh(s / c))
// before the softmax, and a task's positions start at the window's first (pos[b] - W + 1);
// without them the kernel runs as above.
// Head dims must be multiples of 16 (no masked column tail): others are unsupported.
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "kernels/avx512/avx512_math.h"
#include "kernels/avx512/kv_cache.h"
#include "suites/ops/kv_cache_desc.h"

namespace dnnb::avx512 {
namespace {

using kv::kBlock;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// A split covers at least this many positions: below it the merge and the task's setup (the
// group's queries, its O) cost more than the extra thread gains.
constexpr int64_t kMinSplit = 256;

// A [B, N, D] host tensor of any strides (q, k, v, o): row (b, n) and its column stride.
struct Rows3 {
  char* base = nullptr;
  int64_t s[3] = {0, 0, 0};
  int64_t esize = 0;
  template <class T>
  T* row(int64_t b, int64_t n) const {
    return reinterpret_cast<T*>(base + (b * s[0] + n * s[1]) * esize);
  }
};

Rows3 rows_of(const Tensor& t) {
  Rows3 r;
  r.base = static_cast<char*>(t.host_data());
  r.esize = static_cast<int64_t>(dtype_size(t.dtype));
  for (int i = 0; i < 3; ++i) r.s[i] = t.strides[i];
  return r;
}

// One task: positions [j0, j1) of (b, g); slot < 0 writes o, else partial result `slot`.
struct Task {
  int64_t b, g, j0, j1, slot;
};

struct Plan {
  ops::KvCacheDesc d;
  Rows3 q, o;
  const char* k_cache = nullptr;
  const char* v_cache = nullptr;
  int64_t row_bytes = 0;  // bytes of one cache row (D values)
  float k_scale = 1, v_scale = 1;
  std::vector<int64_t> pos;
  std::vector<Task> tasks;
  std::vector<int64_t> first_task;  // per (b, g): its first task; its splits follow
  std::vector<int64_t> splits;      // per (b, g)
  // Per partial slot and head of the group: m, l, then O [D] (unnormalised, relative to m).
  std::vector<float> partial;
  int64_t partial_stride() const { return 2 + d.d; }
};

// Per-thread scratch of a task, 64-byte aligned pieces.
struct Scratch {
  float *q, *o, *s, *lsum, *m, *alpha;
  static Scratch take(int64_t group, int64_t d) {
    thread_local std::vector<float> buf;
    const int64_t need = group * d * 2 + group * kBlock + group * 16 + group * 2 + 6 * 16;
    if (static_cast<int64_t>(buf.size()) < need) buf.assign(need, 0.0f);
    float* p = buf.data();
    auto piece = [&](int64_t n) {
      p += (16 - (reinterpret_cast<uintptr_t>(p) / 4) % 16) % 16;
      float* r = p;
      p += n;
      return r;
    };
    Scratch x;
    x.q = piece(group * d);
    x.o = piece(group * d);
    x.s = piece(group * kBlock);
    x.lsum = piece(group * 16);
    x.m = piece(group);
    x.alpha = piece(group);
    return x;
  }
};

// The group's queries (heads g G .. g G + G - 1 of sequence b) times `mul` into q [G x D] f32.
template <class Fmt>
DNNB_AVX512 void load_queries(const Plan& p, int64_t b, int64_t g, float mul, float* q) {
  using T = typename Fmt::storage;
  const int64_t G = p.d.group(), D = p.d.d, cs = p.q.s[2];
  const __m512 m = _mm512_set1_ps(mul);
  for (int64_t h = 0; h < G; ++h) {
    const T* src = p.q.row<const T>(b, g * G + h);
    float* dst = q + h * D;
    if (cs == 1) {
      for (int64_t e = 0; e < D; e += 16) _mm512_store_ps(dst + e, _mm512_mul_ps(Fmt::load(src + e), m));
    } else {
      for (int64_t e = 0; e < D; ++e) dst[e] = Fmt::to_float(src[e * cs]) * mul;
    }
  }
}

// o row (b, h) = acc * mul, rounded once to the problem dtype.
template <class Fmt>
DNNB_AVX512 void store_output(const Plan& p, int64_t b, int64_t h, const float* acc, float mul) {
  using T = typename Fmt::storage;
  T* dst = p.o.row<T>(b, h);
  const int64_t D = p.d.d, cs = p.o.s[2];
  const __m512 m = _mm512_set1_ps(mul);
  if (cs == 1) {
    for (int64_t e = 0; e < D; e += 16) Fmt::store(dst + e, _mm512_mul_ps(_mm512_loadu_ps(acc + e), m));
  } else {
    for (int64_t e = 0; e < D; ++e) dst[e * cs] = Fmt::from_float(acc[e] * mul);
  }
}

// Head passes over a group of G heads: 4 at a time, then 2, then 1.
inline int pass_heads(int64_t left) { return left >= 4 ? 4 : (left >= 2 ? 2 : 1); }

// Scores of heads [h0, h0 + HB) against the block's nb positions starting at `rows`:
// s[h * kBlock + jj] = q_h . k_jj (q already scaled, in the decoder's lane order). Key tiles
// of KB rows; rows past nb repeat row nb - 1 (read, never past the block) and their scores are
// masked by the softmax.
template <class Cache, int HB, int KB>
DNNB_AVX512 void block_scores(const Cache& cache, const char* rows, int64_t row_bytes, int64_t nb, const float* q,
                              int64_t D, float* s) {
  constexpr int S = Cache::kStep;
  const int64_t nv = D / 16;
  for (int64_t j = 0; j < nb; j += KB) {
    const char* r[KB];
    _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk) r[kk] = rows + std::min<int64_t>(j + kk, nb - 1) * row_bytes;
    __m512 acc[HB][KB];
    _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk)
        acc[h][kk] = _mm512_setzero_ps();
    for (int64_t c = 0; c < nv; c += S) {
      _Pragma("GCC unroll 2") for (int u = 0; u < S; ++u) {
        __m512 k[KB];
        _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk) k[kk] = cache.load(r[kk], c, u);
        _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) {
          const __m512 qv = _mm512_load_ps(q + h * D + 16 * (c + u));
          _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk) acc[h][kk] = _mm512_fmadd_ps(qv, k[kk], acc[h][kk]);
        }
      }
    }
    _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) _Pragma("GCC unroll 2") for (int kk = 0; kk < KB; kk += 4)
        _mm_storeu_ps(s + h * kBlock + j + kk, kv::hsum4(acc[h][kk], acc[h][kk + 1], acc[h][kk + 2], acc[h][kk + 3]));
  }
}

// block_scores for a bf16 query against a bf16 cache (D a multiple of 32): VDPBF16PS takes
// 32 columns of q and k as they are stored (bf16 x bf16 products are exact in f32) and adds
// the even and odd column's products to each lane; the scale is applied to the sums.
template <int HB, int KB>
DNNB_AVX512 void block_scores_bf16(const char* rows, int64_t row_bytes, int64_t nb, const uint16_t* q, int64_t D,
                                   float scale, float* s) {
  const int64_t nw = D / 32;
  const __m128 sc = _mm_set1_ps(scale);
  for (int64_t j = 0; j < nb; j += KB) {
    const char* r[KB];
    _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk) r[kk] = rows + std::min<int64_t>(j + kk, nb - 1) * row_bytes;
    __m512 acc[HB][KB];
    _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk)
        acc[h][kk] = _mm512_setzero_ps();
    for (int64_t c = 0; c < nw; ++c) {
      __m512bh k[KB];
      _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk) k[kk] = (__m512bh)_mm512_loadu_si512(r[kk] + 64 * c);
      _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) {
        const __m512bh qv = (__m512bh)_mm512_load_si512(q + h * D + 32 * c);
        _Pragma("GCC unroll 8") for (int kk = 0; kk < KB; ++kk) acc[h][kk] = _mm512_dpbf16_ps(acc[h][kk], qv, k[kk]);
      }
    }
    _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) _Pragma("GCC unroll 2") for (int kk = 0; kk < KB; kk += 4)
        _mm_storeu_ps(s + h * kBlock + j + kk,
                      _mm_mul_ps(kv::hsum4(acc[h][kk], acc[h][kk + 1], acc[h][kk + 2], acc[h][kk + 3]), sc));
  }
}

// O[h][16 c0 .. 16 (c0 + CV)) = alpha_h O[h][...] + sum_jj p[h][jj] v_jj for heads
// [0, HB) of the pass (o, p, alpha already offset to its first head), in the decoder's lane
// order; c0 is a multiple of the decoder's step.
template <class Cache, int HB, int CV>
DNNB_AVX512 void block_values_tile(const Cache& cache, const char* rows, int64_t row_bytes, int64_t nb, const float* p,
                                   const float* alpha, float* o, int64_t D, int64_t c0) {
  constexpr int S = Cache::kStep;
  static_assert(CV % S == 0, "a tile holds whole steps");
  __m512 acc[HB][CV];
  _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) {
    const __m512 a = _mm512_set1_ps(alpha[h]);
    _Pragma("GCC unroll 8") for (int v = 0; v < CV; ++v) acc[h][v] =
        _mm512_mul_ps(_mm512_load_ps(o + h * D + 16 * (c0 + v)), a);
  }
  for (int64_t jj = 0; jj < nb; ++jj) {
    const char* r = rows + jj * row_bytes;
    __m512 vv[CV];
    _Pragma("GCC unroll 8") for (int v = 0; v < CV; ++v) vv[v] = cache.load(r, c0 + v / S * S, v % S);
    _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) {
      const __m512 pb = _mm512_set1_ps(p[h * kBlock + jj]);
      _Pragma("GCC unroll 8") for (int v = 0; v < CV; ++v) acc[h][v] = _mm512_fmadd_ps(pb, vv[v], acc[h][v]);
    }
  }
  _Pragma("GCC unroll 4") for (int h = 0; h < HB; ++h) _Pragma("GCC unroll 8") for (int v = 0; v < CV; ++v)
      _mm512_store_ps(o + h * D + 16 * (c0 + v), acc[h][v]);
}

// All D / 16 column vectors of a head pass: tiles of CV (8 for one or two heads, 4 for four),
// the rest in tiles of 4, 2, 1 (1 only for an odd count, where the decoder's step is 1).
template <class Cache, int HB>
DNNB_AVX512 void block_values(const Cache& cache, const char* rows, int64_t row_bytes, int64_t nb, const float* p,
                              const float* alpha, float* o, int64_t D) {
  const int64_t nv = D / 16;
  int64_t c = 0;
  if constexpr (HB < 4)
    for (; c + 8 <= nv; c += 8) block_values_tile<Cache, HB, 8>(cache, rows, row_bytes, nb, p, alpha, o, D, c);
  for (; c + 4 <= nv; c += 4) block_values_tile<Cache, HB, 4>(cache, rows, row_bytes, nb, p, alpha, o, D, c);
  for (; c + 2 <= nv; c += 2) block_values_tile<Cache, HB, 2>(cache, rows, row_bytes, nb, p, alpha, o, D, c);
  if constexpr (Cache::kStep == 1)
    for (; c < nv; ++c) block_values_tile<Cache, HB, 1>(cache, rows, row_bytes, nb, p, alpha, o, D, c);
}

// The online softmax of one head over a block: s [kBlock] scores (lanes >= nb ignored) become
// p = e^(s - m_new); m, the lane sums and alpha = e^(m_old - m_new) are updated. Where m_new
// is still -inf the shift is 0, so p and alpha are 0 rather than NaN.
DNNB_AVX512_INLINE void block_softmax(float* s, int64_t nb, float* m, float* lsum, float* alpha) {
  static_assert(kBlock == 32, "two score vectors per block");
  const __mmask16 v0 = tail_mask(std::min<int64_t>(nb, 16)), v1 = nb > 16 ? tail_mask(nb - 16) : 0;
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  const __m512 s0 = _mm512_mask_loadu_ps(ninf, v0, s), s1 = _mm512_mask_loadu_ps(ninf, v1, s + 16);
  const float m_new = std::max(*m, _mm512_reduce_max_ps(_mm512_max_ps(s0, s1)));
  const __m512 shift = _mm512_set1_ps(m_new == kNegInf ? 0.0f : m_new);
  const __m512 a = exp_nonpositive<Accuracy::full>(Vecs<1>{{_mm512_sub_ps(_mm512_set1_ps(*m), shift)}}).v[0];
  const Vecs<2> p = exp_nonpositive<Accuracy::full>(Vecs<2>{{_mm512_sub_ps(s0, shift), _mm512_sub_ps(s1, shift)}});
  // Masked lanes: -inf - shift gives e^-104 clamped, not 0; zero them explicitly.
  const __m512 p0 = _mm512_maskz_mov_ps(v0, p.v[0]), p1 = _mm512_maskz_mov_ps(v1, p.v[1]);
  _mm512_storeu_ps(s, p0);
  _mm512_storeu_ps(s + 16, p1);
  _mm512_store_ps(lsum, _mm512_fmadd_ps(_mm512_load_ps(lsum), a, _mm512_add_ps(p0, p1)));
  *alpha = _mm512_cvtss_f32(a);
  *m = m_new;
}

// Gemma 2's softcap on the block's scores of G heads: s -> c tanh(s / c), in f32 (lanes past
// the block's end are capped too and masked by block_softmax as before).
DNNB_AVX512_INLINE void cap_scores(float* s, int64_t G, float cap) {
  const __m512 c = _mm512_set1_ps(cap), inv = _mm512_set1_ps(1.0f / cap);
  for (int64_t i = 0; i < G * kBlock; i += 16)
    _mm512_store_ps(s + i, _mm512_mul_ps(c, tanh_ps(_mm512_mul_ps(_mm512_load_ps(s + i), inv))));
}

// One task: positions [j0, j1) of (b, g) for all G heads of the group. DotBf16: the scores
// by block_scores_bf16 (bf16 queries and cache); else q is scaled f32 in the decoder's order.
template <class Fmt, class Cache, bool DotBf16>
DNNB_AVX512 void attend_task(Plan& p, const Task& t) {
  const ops::KvCacheDesc& d = p.d;
  const int64_t G = d.group(), D = d.d;
  Scratch x = Scratch::take(G, D);
  auto* q16 = reinterpret_cast<uint16_t*>(x.q);
  if constexpr (DotBf16) {
    for (int64_t h = 0; h < G; ++h) {
      const uint16_t* src = p.q.row<const uint16_t>(t.b, t.g * G + h);
      for (int64_t e = 0; e < D; ++e) q16[h * D + e] = src[e * p.q.s[2]];
    }
  } else {
    load_queries<Fmt>(p, t.b, t.g, static_cast<float>(d.scale), x.q);
    if constexpr (Cache::kPaired)
      for (int64_t h = 0; h < G; ++h) kv::to_pairs(x.q + h * D, D);
  }
  std::fill(x.o, x.o + G * D, 0.0f);
  std::fill(x.lsum, x.lsum + G * 16, 0.0f);
  std::fill(x.m, x.m + G, kNegInf);
  const float scale = static_cast<float>(d.scale);
  // One block: scores, softmax and values with the decoders kd and vd.
  auto block = [&](const auto& kd, const auto& vd, const char* krows, const char* vrows, int64_t nb) DNNB_AVX512_LAMBDA {
    using KDec = std::decay_t<decltype(kd)>;
    using VDec = std::decay_t<decltype(vd)>;
    for (int64_t h = 0; h < G;) {
      const int hb = pass_heads(G - h);
      float* s = x.s + h * kBlock;
      if constexpr (DotBf16) {
        const uint16_t* q = q16 + h * D;
        if (hb == 4) block_scores_bf16<4, 4>(krows, p.row_bytes, nb, q, D, scale, s);
        else if (hb == 2) block_scores_bf16<2, 8>(krows, p.row_bytes, nb, q, D, scale, s);
        else block_scores_bf16<1, 8>(krows, p.row_bytes, nb, q, D, scale, s);
      } else {
        const float* q = x.q + h * D;
        if (hb == 4) block_scores<KDec, 4, 4>(kd, krows, p.row_bytes, nb, q, D, s);
        else if (hb == 2) block_scores<KDec, 2, 8>(kd, krows, p.row_bytes, nb, q, D, s);
        else block_scores<KDec, 1, 8>(kd, krows, p.row_bytes, nb, q, D, s);
      }
      h += hb;
    }
    if (d.softcap > 0) cap_scores(x.s, G, static_cast<float>(d.softcap));
    for (int64_t h = 0; h < G; ++h) block_softmax(x.s + h * kBlock, nb, x.m + h, x.lsum + h * 16, x.alpha + h);
    for (int64_t h = 0; h < G;) {
      const int hb = pass_heads(G - h);
      const float* s = x.s + h * kBlock;
      if (hb == 4) block_values<VDec, 4>(vd, vrows, p.row_bytes, nb, s, x.alpha + h, x.o + h * D, D);
      else if (hb == 2) block_values<VDec, 2>(vd, vrows, p.row_bytes, nb, s, x.alpha + h, x.o + h * D, D);
      else block_values<VDec, 1>(vd, vrows, p.row_bytes, nb, s, x.alpha + h, x.o + h * D, D);
      h += hb;
    }
  };
  const Cache kc(p.k_scale), vc(p.v_scale);
  const int64_t first_row = (t.b * d.kv_heads + t.g) * d.capacity;
  for (int64_t j = t.j0; j < t.j1; j += kBlock) {
    const int64_t nb = std::min(kBlock, t.j1 - j);
    const char* krows = p.k_cache + (first_row + j) * p.row_bytes;
    const char* vrows = p.v_cache + (first_row + j) * p.row_bytes;
    if constexpr (kv::kNanCodesOf<Cache>) {
      if (kv::has_nan_codes(krows, nb * p.row_bytes) || kv::has_nan_codes(vrows, nb * p.row_bytes)) {
        using Checked = kv::CacheE4M3T<true>;
        block(Checked(p.k_scale), Checked(p.v_scale), krows, vrows, nb);
        continue;
      }
    }
    block(kc, vc, krows, vrows, nb);
  }
  for (int64_t h = 0; h < G; ++h) {
    if constexpr (Cache::kPaired) kv::from_pairs(x.o + h * D, D);
    const float l = _mm512_reduce_add_ps(_mm512_load_ps(x.lsum + h * 16));
    if (t.slot < 0) {
      store_output<Fmt>(p, t.b, t.g * G + h, x.o + h * D, 1.0f / l);
    } else {
      float* part = p.partial.data() + (t.slot * G + h) * p.partial_stride();
      part[0] = x.m[h];
      part[1] = l;
      std::copy(x.o + h * D, x.o + (h + 1) * D, part + 2);
    }
  }
}

// The splits of (b, g) merged per head: o = sum_s e^(m_s - M) O_s / sum_s e^(m_s - M) l_s.
template <class Fmt>
DNNB_AVX512 void merge_splits(const Plan& p, int64_t b, int64_t g, float* acc) {
  const int64_t G = p.d.group(), D = p.d.d, bg = b * p.d.kv_heads + g;
  const int64_t n = p.splits[bg], first_slot = p.tasks[p.first_task[bg]].slot;
  for (int64_t h = 0; h < G; ++h) {
    auto part = [&](int64_t s) { return p.partial.data() + ((first_slot + s) * G + h) * p.partial_stride(); };
    float mx = kNegInf;
    for (int64_t s = 0; s < n; ++s) mx = std::max(mx, part(s)[0]);
    const float shift = mx == kNegInf ? 0.0f : mx;
    float l = 0.0f;
    std::fill(acc, acc + D, 0.0f);
    for (int64_t s = 0; s < n; ++s) {
      const float w = std::exp(part(s)[0] - shift);
      l += w * part(s)[1];
      const __m512 wv = _mm512_set1_ps(w);
      for (int64_t e = 0; e < D; e += 16)
        _mm512_storeu_ps(acc + e, _mm512_fmadd_ps(wv, _mm512_loadu_ps(part(s) + 2 + e), _mm512_loadu_ps(acc + e)));
    }
    store_output<Fmt>(p, b, g * G + h, acc, 1.0f / l);
  }
}

// Splits per (b, g): enough tasks for about four per thread when B x KV is small, each split
// at least kMinSplit positions.
void plan_tasks(Plan& p) {
  const ops::KvCacheDesc& d = p.d;
  const int64_t bg_count = d.batch * d.kv_heads;
  const int64_t wanted = std::max<int64_t>(1, (4 * max_threads() + bg_count - 1) / bg_count);
  int64_t slots = 0;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.kv_heads; ++g) {
      const int64_t lo = d.first(p.pos[b]), n = p.pos[b] + 1 - lo;  // positions lo .. pos[b]
      const int64_t splits = std::clamp<int64_t>((n + kMinSplit - 1) / kMinSplit, 1, wanted);
      // Split lengths in whole blocks, so that only the last split ends mid-block.
      const int64_t len = (n + splits * kBlock - 1) / (splits * kBlock) * kBlock;
      const int64_t made = (n + len - 1) / len;
      p.first_task.push_back(static_cast<int64_t>(p.tasks.size()));
      p.splits.push_back(made);
      for (int64_t s = 0; s < made; ++s)
        p.tasks.push_back({b, g, lo + s * len, lo + std::min(n, (s + 1) * len), made > 1 ? slots++ : -1});
    }
  p.partial.assign(static_cast<size_t>(slots * d.group() * p.partial_stride()), 0.0f);
}

// The token's rows stored at (b, g, pos[b]) of both caches by the exact store rule.
template <class Fmt>
Status store_tokens(const Plan& p, const Tensor& k, const Tensor& v, char* k_cache, char* v_cache) {
  using T = typename Fmt::storage;
  const ops::KvCacheDesc& d = p.d;
  std::vector<float> row(d.d);
  for (auto [src, cache, scale] : {std::tuple{rows_of(k), k_cache, p.k_scale}, {rows_of(v), v_cache, p.v_scale}})
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t g = 0; g < d.kv_heads; ++g) {
        const T* x = src.template row<const T>(b, g);
        for (int64_t e = 0; e < d.d; ++e) row[e] = Fmt::to_float(x[e * src.s[2]]);
        unsigned char* dst =
            reinterpret_cast<unsigned char*>(cache) + ((b * d.kv_heads + g) * d.capacity + p.pos[b]) * p.row_bytes;
        switch (d.cache) {
          case DType::f32: std::memcpy(dst, row.data(), d.d * sizeof(float)); break;
          case DType::f16:
            for (int64_t e = 0; e < d.d; ++e) reinterpret_cast<uint16_t*>(dst)[e] = f32_to_f16(row[e]);
            break;
          case DType::bf16:
            for (int64_t e = 0; e < d.d; ++e) reinterpret_cast<uint16_t*>(dst)[e] = f32_to_bf16(row[e]);
            break;
          case DType::f8_e4m3fn:
            for (int64_t e = 0; e < d.d; ++e) dst[e] = f32_to_f8_e4m3fn(row[e] / scale);
            break;
          case DType::q8_0: DNNB_TRY(quantize_row(DType::q8_0, row.data(), d.d, dst)); break;
          default: return Status::unsupported(std::string("avx512 kv_cache: no cache of dtype ") + dtype_name(d.cache));
        }
      }
  return Status::ok();
}

// Calls f(decoder) for the cache dtype (bf16 in pairs when D is a multiple of 32).
template <class F>
Status with_cache(DType cache, int64_t d, F&& f) {
  switch (cache) {
    case DType::f32: return f(kv::CacheF32{});
    case DType::f16: return f(kv::CacheF16{});
    case DType::bf16: return d % 32 == 0 ? f(kv::CacheBF16Pairs{}) : f(kv::CacheBF16{});
    case DType::f8_e4m3fn: return f(kv::CacheE4M3{});
    case DType::q8_0: return f(kv::CacheQ8{});
    default: return Status::unsupported(std::string("avx512 kv_cache: no cache of dtype ") + dtype_name(cache));
  }
}

Status kv_cache_supports(const Problem& problem, const DeviceRuntime&) {
  auto d = ops::kv_cache_desc(problem);
  if (!d) return d.status();
  if (d->d % 16 != 0)
    return Status::unsupported("avx512 kv_cache: head dim " + std::to_string(d->d) +
                               " is not a multiple of 16 (the kernel has no masked column tail)");
  return with_cache(d->cache, d->d, [](auto) { return Status::ok(); });
}

Status run_kv_cache(OpCall& call) {
  auto d = ops::kv_cache_desc(call.problem);
  if (!d) return d.status();
  DNNB_TRY(kv_cache_supports(call.problem, call.device));
  const size_t n_in = d->scaled() ? 8 : 6;
  if (call.inputs.size() != n_in || call.outputs.size() != 1)
    return Status::bad_input("avx512 kv_cache: the signature has " + std::to_string(n_in) + " inputs and 1 output");
  Plan p;
  p.d = *d;
  const Tensor &k = call.inputs[1], &v = call.inputs[2], &pos = call.inputs[3];
  const Tensor &kc = call.inputs[4], &vc = call.inputs[5];
  if (!kc.is_contiguous() || !vc.is_contiguous() || kc.dtype != d->cache || vc.dtype != d->cache)
    return Status::unsupported("avx512 kv_cache: the caches must be contiguous tensors of dtype " +
                               std::string(dtype_name(d->cache)));
  if (pos.dtype != DType::i32) return Status::unsupported("avx512 kv_cache: pos of dtype " + std::string(dtype_name(pos.dtype)));
  p.q = rows_of(call.inputs[0]);
  p.o = rows_of(call.outputs[0]);
  p.k_cache = static_cast<const char*>(kc.host_data());
  p.v_cache = static_cast<const char*>(vc.host_data());
  p.row_bytes = static_cast<int64_t>(storage_bytes(d->cache, d->d));
  if (d->scaled()) {
    p.k_scale = *static_cast<const float*>(call.inputs[6].host_data());
    p.v_scale = *static_cast<const float*>(call.inputs[7].host_data());
    if (!(p.k_scale > 0) || !(p.v_scale > 0) || !std::isfinite(p.k_scale) || !std::isfinite(p.v_scale))
      return Status::bad_input("avx512 kv_cache: k_scale = " + std::to_string(p.k_scale) + ", v_scale = " +
                               std::to_string(p.v_scale) + ": not positive numbers");
  }
  const auto* pos_data = static_cast<const int32_t*>(pos.host_data());
  for (int64_t b = 0; b < d->batch; ++b) {
    const int64_t pb = pos_data[b * pos.strides[0]];
    if (pb < 0 || pb >= d->capacity)
      return Status::bad_input("avx512 kv_cache: pos[" + std::to_string(b) + "] = " + std::to_string(pb) +
                               " is outside the cache's " + std::to_string(d->capacity) + " positions");
    p.pos.push_back(pb);
  }
  plan_tasks(p);
  int64_t work = 0;
  for (const Task& t : p.tasks) work += (t.j1 - t.j0) * d->group() * d->d;
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    DNNB_TRY(store_tokens<Fmt>(p, k, v, static_cast<char*>(kc.host_data()), static_cast<char*>(vc.host_data())));
    return with_cache(d->cache, d->d, [&](auto cache) {
      using Cache = decltype(cache);
      constexpr bool kBf16Pair = std::is_same_v<Fmt, BF16> && std::is_same_v<Cache, kv::CacheBF16Pairs>;
      if (kBf16Pair && has_native_bf16)
        parallel_tasks(static_cast<int64_t>(p.tasks.size()), work,
                       [&](int64_t t) { attend_task<Fmt, Cache, kBf16Pair>(p, p.tasks[t]); });
      else
        parallel_tasks(static_cast<int64_t>(p.tasks.size()), work,
                       [&](int64_t t) { attend_task<Fmt, Cache, false>(p, p.tasks[t]); });
      if (p.partial.empty()) return Status::ok();
      const int64_t bg_count = d->batch * d->kv_heads;
      parallel_tasks(bg_count, work, [&](int64_t bg) {
        if (p.splits[bg] > 1)
          merge_splits<Fmt>(p, bg / d->kv_heads, bg % d->kv_heads, Scratch::take(1, d->d).o);
      });
      return Status::ok();
    });
  });
}

DNNB_REGISTER(register_kernel("kv_cache", {DType::f32, DType::f16, DType::bf16}, kv_cache_supports, run_kv_cache));

}  // namespace
}  // namespace dnnb::avx512
