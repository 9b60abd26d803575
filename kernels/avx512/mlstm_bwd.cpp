// AVX-512 mlstm_bwd: dq, dk, dv, di, df of the parallel mLSTM (docs/ops-family5.md) as torch
// autograd computes them through mlstm_kernels' parallel fw.py (reference/mlstm_bwd.cpp has the
// chain), from q, k, v, i, f and dh, on the f32 FMA units. Per row t, with C~ = S D,
// r = sum_s C~, n = max(|r|, e^-m), div = n + eps and dC = dh v^T:
//   dn = -W / div^2 with W = sum_s C~ dC;  dr = dn sign(r) where |r| > e^-m (else 0);
//   dS = (dC / div + dr) D;  dq = scale dS K,  dk = scale dS^T Q,  dv = (C~ / div)^T dh;
//   dlogD = dS S (+ dm at the row's first argmax s*, dm = -e^-m dn [e^-m branch] - sum_s dS S);
//   di[s] = sum_t dlogD[t, s];  dc = (row sums of dlogD) - di, where a row of dlogD sums to
//   -e^-m dn on the e^-m branch and to 0 otherwise;  df = sigmoid(-f) revcumsum(dc).
// n and m are recomputed, not read: m from the gates in float64 (mlstm_tile.h: a, its prefix max
// M, D = e^(a[s] - M[t])), n from r, which decides the branch; the inputs n, m are accepted
// for the package's signature.
//
// Passes, none with atomics (tasks of 64 queries or 64 keys, as sdpa_bwd):
//   0. per head: a, M, m (float64);
//   1. per query block (queries in lanes): S^T = K Qt and dC^T = V dHt per key block, r and W,
//      then per query 1 / div, dr, dm;
//   2. per head: dm scattered to its argmax (di's extra term), in order;
//   3. per query block: dq = scale sum_s dS k_s (S^T and dC^T again);
//   4. per key block (keys in lanes): S = Qf Kt and dC = dHf Vt per query block from the
//      diagonal on, dk += dS^T (scale Q), dv += (C~ / div)^T dH, column sums of dS S;
//   5. per head: di, dc, df.
// Blocks below the diagonal factor D = e^(a[s] - R) e^(R - M[t]) (R the key block's max of a,
// both factors <= 1); those whose every query factor is below e^-104 are skipped.
// For bf16 on a CPU with AVX512_BF16 every product runs on VDPBF16PS pairs (mlstm_bf16.h): S and
// dC from the stored q, k, v, dh (exact in f32), dq, dk and dv with dS and C~ / div rounded to
// bf16, the rounding the bounds allow for them (reference/mlstm_bwd.cpp).
#include <vector>

#include "kernels/avx512/mlstm_tile.h"

namespace dnnb::avx512 {
namespace {

using mlstm::kBlock;

struct Operands : mlstm::Inputs {
  mlstm::View dh, dq, dk, dv, di, df;
  // Per (head, token), index (b NH + h) S + t:
  const double* a = nullptr;   // i - c
  const double* mx = nullptr;  // prefix max of a
  const double* md = nullptr;  // m
  float* inv_div = nullptr;    // 1 / (n + eps)
  float* dr = nullptr;         // dn sign(r) on the |r| branch, else 0
  double* dm = nullptr;        // the m path's gradient of row t
  double* row_total = nullptr;  // sum_s dlogD[t, s]
  double* di_extra = nullptr;  // sum of dm over the rows whose argmax is s
  float* colsum = nullptr;     // sum_t dS S (column s)
};

// The f32 scratch of a block task.
struct Scratch {
  float *qt, *dht, *kf, *vf, *st, *dct, *acc, *xk, *yq, *sum1, *sum2;  // acc: dq, or dk then dv
  double* mq;
  // bf16 pairs (mlstm_bf16.h) of the S and dC products: p1 [DQK/2 x 64] and p2 [DV/2 x 64]
  // transposed panels (queries, or keys in pass 4), p3 [64 x DQK/2] and p4 [64 x DV/2] rows.
  uint32_t *p1, *p2, *p3, *p4;
  uint32_t *dsp, *pp;  // dS and C~ / div as pairs along their reduction index [32 x 64]
  int64_t wq, wv;  // pair words of a q/k row and of a v/dh row
  Scratch(const ops::MlstmDesc& d) {
    const int64_t dp = mlstm::pad16(d.dqk), dvp = mlstm::pad16(d.dv);
    sdpa::Arena& arena = sdpa::Arena::local();
    wq = (d.dqk + 1) / 2;
    wv = (d.dv + 1) / 2;
    arena.reset(dp * kBlock * 3 + dvp * kBlock * 3 + 3 * kBlock * kBlock + 8 * kBlock + 2 * (wq + wv) * kBlock);
    qt = arena.take(dp * kBlock);    // queries: scaled, transposed (passes 1, 3) or rows (4)
    dht = arena.take(dvp * kBlock);  // dh: transposed (1, 3) or rows (4)
    kf = arena.take(dp * kBlock);    // keys: rows (1, 3) or transposed (4)
    vf = arena.take(dvp * kBlock);   // values: rows (1, 3) or transposed (4)
    st = arena.take(kBlock * kBlock);   // S, then dS
    dct = arena.take(kBlock * kBlock);  // dC, then C~ / div
    acc = arena.take((dp + dvp) * kBlock);  // dq (3), or dk and dv (4)
    xk = arena.take(kBlock);
    yq = arena.take(kBlock);
    sum1 = arena.take(kBlock);
    sum2 = arena.take(kBlock);
    mq = reinterpret_cast<double*>(arena.take(2 * kBlock));
    p1 = reinterpret_cast<uint32_t*>(arena.take(2 * (wq + wv) * kBlock));
    p2 = p1 + wq * kBlock;
    p3 = p2 + wv * kBlock;
    p4 = p3 + kBlock * wq;
    dsp = reinterpret_cast<uint32_t*>(arena.take(kBlock * kBlock));
    pp = dsp + kBlock / 2 * kBlock;
  }
};

// The key factors e^(a[s] - R) of keys [j0, j0 + kb) into x (R their max, returned).
DNNB_AVX512 inline double key_factors(const double* a, int64_t kb, float* x) {
  double r = a[0];
  for (int64_t j = 1; j < kb; ++j) r = std::max(r, a[j]);
  mlstm::exp_diffs(a, kb, r, x);
  return r;
}

// D for key j (row) and the 16 queries of lane group v (query i0 + 16 v + lane): the factored
// x_j y or, on the diagonal, e^(a_j - M[t]) where s <= t < i_end.
DNNB_AVX512_INLINE __m512 d_keyrow(const Scratch& w, bool diagonal, int64_t j, double aj, int64_t s, int64_t v,
                                   int64_t i0, int64_t i_end) {
  if (!diagonal) return _mm512_mul_ps(_mm512_set1_ps(w.xk[j]), _mm512_loadu_ps(w.yq + 16 * v));
  const __mmask16 seen = sdpa::range_mask(i0 + 16 * v, s, i_end);
  const __m512d as = _mm512_set1_pd(aj);
  const __m512 arg = _mm512_maskz_mov_ps(seen, mlstm::diff16(as, as, w.mq + 16 * v));
  return _mm512_maskz_mov_ps(seen, mlstm::exp16(arg));
}

// Passes 1 (kDq false: r, W -> 1/div, dr, dm) and 3 (kDq true: dq) over queries [i0, i0 + nq).
template <class Fmt, bool kDq>
DNNB_AVX512 void query_task(const Operands& x, int64_t b, int64_t h, int64_t i0) {
  using T = typename Fmt::storage;
  const ops::MlstmDesc& d = x.d;
  const int64_t nq = std::min(kBlock, d.s - i0), nvq = (nq + 15) / 16;
  const int64_t dp = mlstm::pad16(d.dqk), dvp = mlstm::pad16(d.dv);
  const int64_t head = (b * d.heads + h) * d.s;
  const double* a = x.a + head;
  const Scratch w(d);
  const bool pairs = mlstm::use_pairs<Fmt>();
  // S^T and dC^T on pairs take q unscaled (the scale joins C~ in pass 1; dS does not need it).
  const float c_scale = pairs ? static_cast<float>(d.scale()) : 1.0f;
  if (pairs) {
    mlstm::query_pairs(x.q, b, h, i0, nq, d.dqk, w.p3, w.p1);
    mlstm::query_pairs(x.dh, b, h, i0, nq, d.dv, w.p4, w.p2);
  } else {
    sdpa::pack_rows_transposed<Fmt>(x.q, b, h, i0, nq, d.dqk, static_cast<float>(d.scale()), w.kf, w.qt);
    sdpa::pack_rows_transposed<Fmt>(x.dh, b, h, i0, nq, d.dv, 1.0f, w.vf, w.dht);
  }
  for (int64_t i = 0; i < kBlock; ++i) w.mq[i] = x.mx[head + i0 + std::min(i, nq - 1)];
  std::fill(w.sum1, w.sum1 + kBlock, 0.0f);
  std::fill(w.sum2, w.sum2 + kBlock, 0.0f);
  if constexpr (kDq) std::fill(w.acc, w.acc + kBlock * dp, 0.0f);
  // 1 / div and dr per lane (pass 3); lanes past nq repeat the last query's.
  alignas(64) float inv_div[kBlock], dr[kBlock];
  if constexpr (kDq)
    for (int64_t i = 0; i < kBlock; ++i) {
      inv_div[i] = x.inv_div[head + i0 + std::min(i, nq - 1)];
      dr[i] = x.dr[head + i0 + std::min(i, nq - 1)];
    }

  for (int64_t j0 = 0; j0 < i0 + nq; j0 += kBlock) {
    const int64_t kb = std::min(kBlock, i0 + nq - j0);
    const bool diagonal = j0 + kb > i0;
    if (!diagonal) {
      const double r = key_factors(a + j0, kb, w.xk);
      if (r - w.mq[0] < mlstm::kNegligible) continue;
      for (int64_t v = 0; v < nvq; ++v)
        _mm512_storeu_ps(w.yq + 16 * v, mlstm::exp16(_mm512_sub_ps(_mm512_setzero_ps(), mlstm::diff16(w.mq + 16 * v, r))));
    }
    if (pairs) {
      for (int64_t j = 0; j < kb; ++j) {
        mlstm::row_pairs(x.k.row<const uint16_t>(b, h, j0 + j), x.k.col_stride(), d.dqk, w.p3 + j * w.wq);
        mlstm::row_pairs(x.v.row<const uint16_t>(b, h, j0 + j), x.v.col_stride(), d.dv, w.p4 + j * w.wv);
      }
      // dq's right operand: K as pairs of consecutive keys (into kf's space).
      if (kDq)
        for (int64_t p = 0; 2 * p < kb; ++p)
          mlstm::pairs_from_bf16(x.k.row<const uint16_t>(b, h, j0 + 2 * p),
                                 2 * p + 1 < kb ? x.k.row<const uint16_t>(b, h, j0 + 2 * p + 1) : nullptr,
                                 x.k.col_stride(), d.dqk, dp, reinterpret_cast<uint32_t*>(w.kf) + p * dp);
      mlstm::pair_gemm(w.st, kBlock, kb, nvq, w.p3, w.wq, 1, w.p1, kBlock, w.wq, false);
      mlstm::pair_gemm(w.dct, kBlock, kb, nvq, w.p4, w.wv, 1, w.p2, kBlock, w.wv, false);
    } else {
      for (int64_t j = 0; j < kb; ++j) {
        sdpa::load_row<Fmt>(x.k.row<const T>(b, h, j0 + j), x.k.col_stride(), d.dqk, 1.0f, w.kf + j * dp, dp);
        sdpa::load_row<Fmt>(x.v.row<const T>(b, h, j0 + j), x.v.col_stride(), d.dv, 1.0f, w.vf + j * dvp, dvp);
      }
      sdpa::gemm(w.st, kBlock, kb, nvq, w.kf, dp, 1, w.qt, kBlock, d.dqk, false);
      sdpa::gemm(w.dct, kBlock, kb, nvq, w.vf, dvp, 1, w.dht, kBlock, d.dv, false);
    }
    for (int64_t v = 0; v < nvq; ++v) {
      __m512 r = _mm512_loadu_ps(w.sum1 + 16 * v), wsum = _mm512_loadu_ps(w.sum2 + 16 * v);
      for (int64_t j = 0; j < kb; ++j) {
        float* s = w.st + j * kBlock + 16 * v;
        const __m512 dm = d_keyrow(w, diagonal, j, a[j0 + j], j0 + j, v, i0, i0 + nq);
        const __m512 dc = _mm512_loadu_ps(w.dct + j * kBlock + 16 * v);
        if constexpr (kDq) {
          const __m512 g = _mm512_fmadd_ps(dc, _mm512_load_ps(inv_div + 16 * v), _mm512_load_ps(dr + 16 * v));
          _mm512_storeu_ps(s, _mm512_mul_ps(g, dm));
        } else {
          const __m512 c = _mm512_mul_ps(_mm512_loadu_ps(s), _mm512_mul_ps(dm, _mm512_set1_ps(c_scale)));
          r = _mm512_add_ps(r, c);
          wsum = _mm512_fmadd_ps(c, dc, wsum);
        }
      }
      _mm512_storeu_ps(w.sum1 + 16 * v, r);
      _mm512_storeu_ps(w.sum2 + 16 * v, wsum);
    }
    // dQ [nq x DQK] += dS K: dS read transposed out of its [keys x queries] block (on pairs:
    // dS rounded to bf16 as pairs of consecutive keys).
    if constexpr (kDq) {
      if (pairs) {
        for (int64_t p = 0; 2 * p < kb; ++p)
          mlstm::pairs_from_f32(w.st + 2 * p * kBlock, 2 * p + 1 < kb ? w.st + (2 * p + 1) * kBlock : nullptr, 16 * nvq,
                                w.dsp + p * kBlock);
        mlstm::pair_gemm(w.acc, dp, nq, dp / 16, w.dsp, 1, kBlock, reinterpret_cast<const uint32_t*>(w.kf), dp,
                         (kb + 1) / 2, true);
      } else {
        sdpa::gemm(w.acc, dp, nq, dp / 16, w.st, 1, kBlock, w.kf, dp, kb, true);
      }
    }
  }

  if constexpr (kDq) {
    for (int64_t i = 0; i < nq; ++i)
      sdpa::store_row<Fmt>(x.dq.row<T>(b, h, i0 + i), x.dq.col_stride(), d.dqk, w.acc + i * dp, static_cast<float>(d.scale()));
  } else {
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t t = head + i0 + i;
      const double r = w.sum1[i], wv = w.sum2[i], e_m = std::exp(-x.md[t]);
      const double n = std::max(std::fabs(r), e_m), div = n + d.eps;
      const double dn = -wv / (div * div);
      const double to_r = std::fabs(r) > e_m ? 1.0 : std::fabs(r) < e_m ? 0.0 : 0.5;
      const double dr_t = dn * to_r * (r > 0 ? 1.0 : r < 0 ? -1.0 : 0.0);
      x.inv_div[t] = static_cast<float>(1.0 / div);
      x.dr[t] = static_cast<float>(dr_t);
      // Row t of dlogD sums to sum_s (dC / div + dr) C~ = W / div + dr r before dm.
      const double direct = wv / div + dr_t * r;
      x.dm[t] = -e_m * dn * (1 - to_r) - direct;
      x.row_total[t] = -e_m * dn * (1 - to_r);
    }
  }
}

// Pass 4: dk, dv and the column sums of dS S for keys [j0, j0 + kb) of head (b, h).
template <class Fmt>
DNNB_AVX512 void key_task(const Operands& x, int64_t b, int64_t h, int64_t j0) {
  using T = typename Fmt::storage;
  const ops::MlstmDesc& d = x.d;
  const int64_t kb = std::min(kBlock, d.s - j0), nvk = (kb + 15) / 16;
  const int64_t dp = mlstm::pad16(d.dqk), dvp = mlstm::pad16(d.dv);
  const int64_t head = (b * d.heads + h) * d.s;
  const double* a = x.a + head;
  const Scratch w(d);
  // Keys and values transposed (key in lane), through the row scratch.
  const bool pairs = mlstm::use_pairs<Fmt>();
  if (pairs) {
    mlstm::query_pairs(x.k, b, h, j0, kb, d.dqk, w.p3, w.p1);
    mlstm::query_pairs(x.v, b, h, j0, kb, d.dv, w.p4, w.p2);
  } else {
    sdpa::pack_rows_transposed<Fmt>(x.k, b, h, j0, kb, d.dqk, 1.0f, w.qt, w.kf);
    sdpa::pack_rows_transposed<Fmt>(x.v, b, h, j0, kb, d.dv, 1.0f, w.dht, w.vf);
  }
  // S on pairs comes from q unscaled: the scale is applied per score, and to dk at the end.
  const __m512 s_scale = _mm512_set1_ps(pairs ? static_cast<float>(d.scale()) : 1.0f);
  const float dk_scale = pairs ? static_cast<float>(d.scale()) : 1.0f;
  const double r = key_factors(a + j0, kb, w.xk);
  // The a of the 64 key lanes in float64 (lanes past kb: -inf, never seen).
  alignas(64) double ak[kBlock];
  for (int64_t j = 0; j < kBlock; ++j) ak[j] = j < kb ? a[j0 + j] : -std::numeric_limits<double>::infinity();
  float* dkacc = w.acc;
  float* dvacc = w.acc + kBlock * dp;
  std::fill(w.acc, w.acc + kBlock * (dp + dvp), 0.0f);
  __m512 col[4];
  for (int v = 0; v < 4; ++v) col[v] = _mm512_setzero_ps();

  for (int64_t i0 = j0; i0 < d.s; i0 += kBlock) {
    const int64_t nq = std::min(kBlock, d.s - i0);
    const bool diagonal = i0 == j0;
    // M grows with t: once the key factor R lies e^-104 below a block's first query, it does so
    // for every later query too.
    if (!diagonal && r - x.mx[head + i0] < mlstm::kNegligible) break;
    if (!pairs)
      for (int64_t i = 0; i < nq; ++i) {
        sdpa::load_row<Fmt>(x.q.row<const T>(b, h, i0 + i), x.q.col_stride(), d.dqk, static_cast<float>(d.scale()),
                            w.qt + i * dp, dp);
        sdpa::load_row<Fmt>(x.dh.row<const T>(b, h, i0 + i), x.dh.col_stride(), d.dv, 1.0f, w.dht + i * dvp, dvp);
      }
    if (pairs) {
      // dk's and dv's right operands: q (unscaled) and dh as pairs of consecutive queries, in
      // qt's and dht's space.
      for (int64_t p = 0; 2 * p < nq; ++p) {
        const bool two = 2 * p + 1 < nq;
        mlstm::pairs_from_bf16(x.q.row<const uint16_t>(b, h, i0 + 2 * p),
                               two ? x.q.row<const uint16_t>(b, h, i0 + 2 * p + 1) : nullptr, x.q.col_stride(), d.dqk,
                               dp, reinterpret_cast<uint32_t*>(w.qt) + p * dp);
        mlstm::pairs_from_bf16(x.dh.row<const uint16_t>(b, h, i0 + 2 * p),
                               two ? x.dh.row<const uint16_t>(b, h, i0 + 2 * p + 1) : nullptr, x.dh.col_stride(), d.dv,
                               dvp, reinterpret_cast<uint32_t*>(w.dht) + p * dvp);
      }
      for (int64_t i = 0; i < nq; ++i) {
        mlstm::row_pairs(x.q.row<const uint16_t>(b, h, i0 + i), x.q.col_stride(), d.dqk, w.p3 + i * w.wq);
        mlstm::row_pairs(x.dh.row<const uint16_t>(b, h, i0 + i), x.dh.col_stride(), d.dv, w.p4 + i * w.wv);
      }
      mlstm::pair_gemm(w.st, kBlock, nq, nvk, w.p3, w.wq, 1, w.p1, kBlock, w.wq, false);
      mlstm::pair_gemm(w.dct, kBlock, nq, nvk, w.p4, w.wv, 1, w.p2, kBlock, w.wv, false);
    } else {
      sdpa::gemm(w.st, kBlock, nq, nvk, w.qt, dp, 1, w.kf, kBlock, d.dqk, false);
      sdpa::gemm(w.dct, kBlock, nq, nvk, w.dht, dvp, 1, w.vf, kBlock, d.dv, false);
    }
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t t = head + i0 + i;
      const double mt = x.mx[t];
      const __m512 inv = _mm512_set1_ps(x.inv_div[t]), drv = _mm512_set1_ps(x.dr[t]);
      const __m512 y = _mm512_set1_ps(diagonal ? 0.0f : static_cast<float>(std::exp(r - mt)));  // R <= M[t]
      for (int64_t v = 0; v < nvk; ++v) {
        __m512 dmat;
        if (diagonal) {
          const __mmask16 seen = sdpa::range_mask(j0 + 16 * v, 0, std::min(i0 + i + 1, j0 + kb));  // s <= t
          const __m512d mtv = _mm512_set1_pd(mt);
          const __m256 d0 = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_load_pd(ak + 16 * v), mtv));
          const __m256 d1 = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_load_pd(ak + 16 * v + 8), mtv));
          const __m512 arg = _mm512_maskz_mov_ps(seen, _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1));
          dmat = _mm512_maskz_mov_ps(seen, mlstm::exp16(arg));
        } else {
          dmat = _mm512_mul_ps(_mm512_loadu_ps(w.xk + 16 * v), y);
        }
        float* s = w.st + i * kBlock + 16 * v;
        float* c = w.dct + i * kBlock + 16 * v;
        const __m512 sv = _mm512_mul_ps(_mm512_loadu_ps(s), s_scale);
        const __m512 ds = _mm512_mul_ps(_mm512_fmadd_ps(_mm512_loadu_ps(c), inv, drv), dmat);
        col[v] = _mm512_fmadd_ps(ds, sv, col[v]);
        _mm512_storeu_ps(s, ds);
        _mm512_storeu_ps(c, _mm512_mul_ps(_mm512_mul_ps(sv, dmat), inv));
      }
    }
    // dK [kb x DQK] += dS^T (scale Q), dV [kb x DV] += (C~ / div)^T dH: both read transposed
    // out of their [queries x keys] blocks.
    // On pairs: dS and C~ / div rounded to bf16 as pairs of consecutive queries.
    if (pairs) {
      for (int64_t p = 0; 2 * p < nq; ++p) {
        const bool two = 2 * p + 1 < nq;
        mlstm::pairs_from_f32(w.st + 2 * p * kBlock, two ? w.st + (2 * p + 1) * kBlock : nullptr, 16 * nvk, w.dsp + p * kBlock);
        mlstm::pairs_from_f32(w.dct + 2 * p * kBlock, two ? w.dct + (2 * p + 1) * kBlock : nullptr, 16 * nvk, w.pp + p * kBlock);
      }
      mlstm::pair_gemm(dkacc, dp, kb, dp / 16, w.dsp, 1, kBlock, reinterpret_cast<const uint32_t*>(w.qt), dp, (nq + 1) / 2, true);
      mlstm::pair_gemm(dvacc, dvp, kb, dvp / 16, w.pp, 1, kBlock, reinterpret_cast<const uint32_t*>(w.dht), dvp, (nq + 1) / 2,
                       true);
    } else {
      sdpa::gemm(dkacc, dp, kb, dp / 16, w.st, 1, kBlock, w.qt, dp, nq, true);
      sdpa::gemm(dvacc, dvp, kb, dvp / 16, w.dct, 1, kBlock, w.dht, dvp, nq, true);
    }
  }

  for (int64_t j = 0; j < kb; ++j) {
    sdpa::store_row<Fmt>(x.dk.row<T>(b, h, j0 + j), x.dk.col_stride(), d.dqk, dkacc + j * dp, dk_scale);
    sdpa::store_row<Fmt>(x.dv.row<T>(b, h, j0 + j), x.dv.col_stride(), d.dv, dvacc + j * dvp, 1.0f);
  }
  for (int v = 0; v < 4; ++v) _mm512_storeu_ps(w.sum1 + 16 * v, col[v]);
  for (int64_t j = 0; j < kb; ++j) x.colsum[head + j0 + j] = w.sum1[j];
}


Status run_mlstm_bwd(OpCall& call) {
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 8 || call.outputs.size() != 5)
    return Status::bad_input(
        "avx512 mlstm_bwd: the signature has 8 inputs (q, k, v, i, f, dh, n, m) and 5 outputs (dq, dk, dv, di, df)");
  Operands x;
  DNNB_TRY(mlstm::bind_inputs(call, *d, x, "mlstm_bwd"));
  if (call.outputs[3].dtype != DType::f32 || call.outputs[4].dtype != DType::f32)
    return Status::bad_input("avx512 mlstm_bwd: outputs di and df must be f32");
  x.dh = mlstm::view_of(call.inputs[5]);
  x.dq = mlstm::view_of(call.outputs[0]);
  x.dk = mlstm::view_of(call.outputs[1]);
  x.dv = mlstm::view_of(call.outputs[2]);
  x.di = mlstm::view_of(call.outputs[3]);
  x.df = mlstm::view_of(call.outputs[4]);

  const int64_t heads = d->batch * d->heads, rows = heads * d->s;
  std::vector<double> f64(static_cast<size_t>(6 * rows));
  std::vector<float> f32(static_cast<size_t>(3 * rows));
  double* a = f64.data();
  double* mx = a + rows;
  double* md = mx + rows;
  x.a = a;
  x.mx = mx;
  x.md = md;
  x.dm = md + rows;
  x.row_total = x.dm + rows;
  x.di_extra = x.row_total + rows;
  x.inv_div = f32.data();
  x.dr = x.inv_div + rows;
  x.colsum = x.dr + rows;

  // Pass 0.
  parallel_tasks(heads, rows, [&](int64_t bh) {
    const int64_t off = bh * d->s;
    mlstm::head_gates(x, bh / d->heads, bh % d->heads, a + off, mx + off, md + off);
  });
  const int64_t blocks = (d->s + kBlock - 1) / kBlock;
  const int64_t tasks = heads * blocks;
  const int64_t work = rows * (d->s + 1) / 2 * (d->dqk + d->dv);
  // Query blocks in the order 0, last, 1, last - 1, ... (as mlstm.cpp): balanced thread ranges.
  auto block_of = [blocks](int64_t k) { return k % 2 == 0 ? k / 2 : blocks - 1 - k / 2; };
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    // Pass 1.
    parallel_tasks(tasks, work, [&](int64_t t) {
      const int64_t bh = t / blocks;
      query_task<Fmt, false>(x, bh / d->heads, bh % d->heads, block_of(t % blocks) * kBlock);
    });
    // Pass 2: dm to the row's first argmax (the first s reaching the prefix max), in order.
    parallel_tasks(heads, rows, [&](int64_t bh) {
      const int64_t off = bh * d->s;
      std::fill(x.di_extra + off, x.di_extra + off + d->s, 0.0);
      int64_t arg = 0;
      for (int64_t t = 0; t < d->s; ++t) {
        if (a[off + t] > a[off + arg]) arg = t;
        x.di_extra[off + arg] += x.dm[off + t];
      }
    });
    // Passes 3 and 4.
    parallel_tasks(tasks, work, [&](int64_t t) {
      const int64_t bh = t / blocks;
      query_task<Fmt, true>(x, bh / d->heads, bh % d->heads, block_of(t % blocks) * kBlock);
    });
    parallel_tasks(tasks, work, [&](int64_t t) {
      const int64_t bh = t / blocks;
      key_task<Fmt>(x, bh / d->heads, bh % d->heads, block_of(t % blocks) * kBlock);
    });
    // Pass 5: di, then dc = row total - di summed from the end, df = sigmoid(-f) of that.
    parallel_tasks(heads, rows, [&](int64_t bh) {
      const int64_t off = bh * d->s, b = bh / d->heads, h = bh % d->heads;
      double acc = 0.0;
      for (int64_t s = d->s - 1; s >= 0; --s) {
        const double di = static_cast<double>(x.colsum[off + s]) + x.di_extra[off + s];
        mlstm::gate(x.di, b, h, s) = static_cast<float>(di);
        acc += x.row_total[off + s] - di;
        mlstm::gate(x.df, b, h, s) = static_cast<float>(acc / (1.0 + std::exp(static_cast<double>(mlstm::gate(x.f, b, h, s)))));
      }
    });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("mlstm_bwd", {DType::f32, DType::f16, DType::bf16},
                              [](const Problem& p, const DeviceRuntime&) { return mlstm::supports_problem(p); }, run_mlstm_bwd,
                              "", "", mlstm::compute_unit));

}  // namespace
}  // namespace dnnb::avx512
