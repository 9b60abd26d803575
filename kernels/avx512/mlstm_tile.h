// What the AVX-512 mLSTM kernels (mlstm.cpp, mlstm_chunkwise.cpp, mlstm_step.cpp,
// mlstm_bwd.cpp) share: the operand views, the gates' log-space prefix sums in float64, and the
// f32 exponentials of differences of large log-space values.
//
// The packing and the small f32 GEMM are the attention kernels' (sdpa_tile.h): rows converted
// to f32 and padded to 16 columns, queries transposed into 64-lane panels, C (+)= A B with
// broadcasts of A against 16-lane rows of B.
//
// Precision of the gates: c = cumsum(logsigmoid(f)) reaches -1e4 and beyond for long
// sequences with f near 0, and the kernels need differences such as a[s] - M[t] of two such
// values. Rounded to f32 first, each would carry an absolute error of |c| 2^-24 (6e-4 at
// 1e4), a relative error of the exponential that large. So c, a and the prefix max are float64
// and every difference is taken in float64 before it is rounded to f32 for the exponential:
// the argument then carries |difference| 2^-24, which matters only where e^difference is far
// below 1.
#pragma once
#include <cmath>
#include <limits>

#include "kernels/avx512/mlstm_bf16.h"
#include "kernels/avx512/sdpa_tile.h"
#include "suites/ops/mlstm_desc.h"

namespace dnnb::avx512::mlstm {

using sdpa::kBlock;
using sdpa::pad16;
using sdpa::View;
using sdpa::view_of;

// Exponent arguments below this give 0 in f32 (exp_nonpositive clamps there): a block whose
// every factor lies below it adds nothing and is skipped.
constexpr double kNegligible = -104.0;

// log(sigmoid(x)) in float64, without overflow for either sign.
inline double log_sigmoid(double x) { return std::min(x, 0.0) - std::log1p(std::exp(-std::fabs(x))); }

// Element (b, h, s) of a [B, NH, S] f32 view.
inline float& gate(const View& v, int64_t b, int64_t h, int64_t s) {
  return v.row<float>(0, b, h)[s * v.col_stride()];
}

// The inputs every mLSTM op reads: q, k, v (problem dtype) and the gate pre-activations i, f
// (f32), in this order at the head of the call's inputs.
struct Inputs {
  ops::MlstmDesc d;
  View q, k, v, i, f;
};

// Binds d and the views of q, k, v, i, f; bad input when i or f is not f32.
inline Status bind_inputs(const OpCall& call, const ops::MlstmDesc& d, Inputs& x, const char* op) {
  x.d = d;
  if (call.inputs.size() < 5) return Status::bad_input(std::string("avx512 ") + op + ": fewer than 5 inputs");
  View* views[5] = {&x.q, &x.k, &x.v, &x.i, &x.f};
  for (int n = 0; n < 5; ++n) *views[n] = view_of(call.inputs[n]);
  if (call.inputs[3].dtype != DType::f32) return Status::bad_input(std::string("avx512 ") + op + ": input i is not f32");
  if (call.inputs[4].dtype != DType::f32) return Status::bad_input(std::string("avx512 ") + op + ": input f is not f32");
  return Status::ok();
}

// The log-space quantities of the parallel form for head (b, h), in float64:
// a[s] = i[s] - c[s] with c = cumsum(logsigmoid(f)), mx[t] = max_{s <= t} a[s] (so that
// logD[t, s] = c[t] + a[s] and the stabiliser m[t] = c[t] + mx[t]), and m[t] itself.
inline void head_gates(const Inputs& x, int64_t b, int64_t h, double* a, double* mx, double* m) {
  double c = 0.0, run = -std::numeric_limits<double>::infinity();
  for (int64_t s = 0; s < x.d.s; ++s) {
    c += log_sigmoid(gate(x.f, b, h, s));
    a[s] = static_cast<double>(gate(x.i, b, h, s)) - c;
    run = std::max(run, a[s]);
    mx[s] = run;
    m[s] = c + run;
  }
}

// Eight float64 differences hi - lo[0, 8) per step, rounded to f32, into 16 lanes.
DNNB_AVX512_INLINE __m512 diff16(__m512d hi_lo, __m512d hi_hi, const double* lo) {
  const __m256 d0 = _mm512_cvtpd_ps(_mm512_sub_pd(hi_lo, _mm512_loadu_pd(lo)));
  const __m256 d1 = _mm512_cvtpd_ps(_mm512_sub_pd(hi_hi, _mm512_loadu_pd(lo + 8)));
  return _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1);
}
// The same with the float64 minuend per lane and one subtrahend: hi[0, 16) - lo.
DNNB_AVX512_INLINE __m512 diff16(const double* hi, double lo) {
  const __m512d l = _mm512_set1_pd(lo);
  const __m256 d0 = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_loadu_pd(hi), l));
  const __m256 d1 = _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_loadu_pd(hi + 8), l));
  return _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1);
}

// e^x for 16 lanes with x <= 0 (full f32 accuracy: the factors multiply f32 products).
DNNB_AVX512_INLINE __m512 exp16(__m512 x) { return exp_nonpositive<Accuracy::full>(Vecs<1>{{x}}).v[0]; }

// out[j] = e^(hi[j] - lo) for j < n (hi[j] <= lo), zeros in [n, pad16(n)).
DNNB_AVX512 inline void exp_diffs(const double* hi, int64_t n, double lo, float* out) {
  alignas(64) double tmp[16];
  for (int64_t j = 0; j < n; j += 16) {
    const int64_t k = std::min<int64_t>(16, n - j);
    const double* src = hi + j;
    if (k < 16) {
      for (int64_t e = 0; e < 16; ++e) tmp[e] = e < k ? hi[j + e] : -std::numeric_limits<double>::infinity();
      src = tmp;
    }
    _mm512_storeu_ps(out + j, exp16(diff16(src, lo)));
  }
}

// A row of n f32 values times a float64 factor to a dtype row: f32 multiply when the factor is
// a normal f32, else each product in float64 (a factor past f32's range, as 1 / (n + eps)
// when the normaliser exp(-m) is huge, would otherwise flush the row to 0 or Inf).
template <class Fmt>
DNNB_AVX512 void store_scaled(typename Fmt::storage* p, int64_t stride, int64_t n, const float* src, double mul) {
  const double mag = std::fabs(mul);
  if (mag == 0.0 || (mag >= 1e-37 && mag <= 1e37)) {
    sdpa::store_row<Fmt>(p, stride, n, src, static_cast<float>(mul));
    return;
  }
  for (int64_t e = 0; e < n; ++e) p[e * stride] = Fmt::from_float(static_cast<float>(src[e] * mul));
}

// ---- One (query block, key block) pair of the parallel form ------------------------------

// True when a format's products run on VDPBF16PS (mlstm_bf16.h): bf16 on a CPU with AVX512_BF16.
template <class Fmt>
bool use_pairs() {
  return std::is_same_v<Fmt, BF16> && has_native_bf16;
}

// The scratch of a query block (64 queries), carved from the thread's arena: f32 tiles, and the
// bf16 pair panels when the products run on pairs.
struct Tile {
  float *qt, *kf, *vf, *st, *acc, *rowsum, *yq, *xk;
  double* mq;  // the stabiliser's prefix max M of the 64 query lanes
  uint32_t *qp, *kp, *vp, *cp;  // pairs: Q^T [DQK/2 x 64], K [64 x DQK/2], V [32 x DV], C~^T [32 x 64]
  // Takes the pieces from `arena` (reset by the caller with at least floats(d)).
  Tile(sdpa::Arena& arena, const ops::MlstmDesc& d) {
    const int64_t dp = pad16(d.dqk), dvp = pad16(d.dv);
    qt = arena.take(d.dqk * kBlock);  // scaled queries, transposed
    kf = arena.take(kBlock * dp);     // the key block, row-major (times the key factors)
    vf = arena.take(kBlock * dvp);    // the value block, row-major, padded
    st = arena.take(kBlock * kBlock);  // S^T, then C^T
    acc = arena.take(kBlock * dvp);   // sum_s C[t, s] v[s]
    rowsum = arena.take(kBlock);      // sum_s C[t, s]
    yq = arena.take(kBlock);          // a block's query factors
    xk = arena.take(kBlock);          // a block's key factors
    mq = reinterpret_cast<double*>(arena.take(2 * kBlock));
    const int64_t w = pair_words(d);
    qp = reinterpret_cast<uint32_t*>(arena.take(pair_floats(d)));
    kp = qp + w * kBlock;
    vp = kp + kBlock * w;
    cp = vp + kBlock / 2 * dvp;
  }
  static int64_t pair_words(const ops::MlstmDesc& d) { return (d.dqk + 1) / 2; }
  static int64_t pair_floats(const ops::MlstmDesc& d) {
    return 2 * pair_words(d) * kBlock + kBlock / 2 * pad16(d.dv) + kBlock / 2 * kBlock;
  }
  static int64_t floats(const ops::MlstmDesc& d) {
    const int64_t dp = pad16(d.dqk), dvp = pad16(d.dv);
    return d.dqk * kBlock + kBlock * dp + kBlock * dvp * 2 + kBlock * kBlock + 5 * kBlock + pair_floats(d);
  }
};

// Packs the queries [i0, i0 + nq) of head (b, h) into t: t.qt scaled and transposed, or t.qp
// as transposed pairs (unscaled: the scale goes into D) when the products run on pairs.
template <class Fmt>
DNNB_AVX512 void pack_queries(const Inputs& x, int64_t b, int64_t h, const Tile& t, int64_t i0, int64_t nq) {
  if (use_pairs<Fmt>())
    query_pairs(x.q, b, h, i0, nq, x.d.dqk, reinterpret_cast<uint32_t*>(t.kf), t.qp);
  else
    sdpa::pack_rows_transposed<Fmt>(x.q, b, h, i0, nq, x.d.dqk, static_cast<float>(x.d.scale()), t.kf, t.qt);
}

// Values [j0, j0 + kb) of head (b, h) as pairs of consecutive rows: vp[p][c] = (v[2p][c], v[2p+1][c]).
DNNB_AVX512 inline void value_pairs(const Inputs& x, int64_t b, int64_t h, int64_t j0, int64_t kb, uint32_t* vp) {
  const int64_t dvp = pad16(x.d.dv);
  for (int64_t p = 0; 2 * p < kb; ++p) {
    const uint16_t* r0 = x.v.row<const uint16_t>(b, h, j0 + 2 * p);
    const uint16_t* r1 = 2 * p + 1 < kb ? x.v.row<const uint16_t>(b, h, j0 + 2 * p + 1) : nullptr;
    pairs_from_bf16(r0, r1, x.v.col_stride(), x.d.dv, dvp, vp + p * dvp);
  }
}

// Adds keys [j0, j0 + kb) of head (b, h) to the queries [i0, i0 + nq) of t (queries packed by
// pack_queries, t.mq set for all 64 lanes): C[t, s] = S[t, s] e^(ak[s - j0] - M[t]) for s <= t,
// row sums into t.rowsum, C V into t.acc. ak: the keys' log-space a. Blocks wholly below the
// diagonal factor D as e^(a[s] - R) e^(R - M[t]) with R the block's max of a (both <= 1 since
// R <= M[t]): the key factor scales the packed key rows (f32) or the key's row of S (pairs),
// the query factor is one multiply per lane; such a block is skipped when every query factor
// is below e^-104. The diagonal block takes D per element.
template <class Fmt>
DNNB_AVX512 void attend_block(const Inputs& x, int64_t b, int64_t h, const Tile& t, int64_t i0, int64_t nq,
                              int64_t j0, int64_t kb, const double* ak) {
  using T = typename Fmt::storage;
  const ops::MlstmDesc& d = x.d;
  const int64_t nvq = (nq + 15) / 16, dp = pad16(d.dqk), dvp = pad16(d.dv);
  const bool pairs = use_pairs<Fmt>(), diagonal = j0 + kb > i0;
  const float scale = pairs ? static_cast<float>(d.scale()) : 1.0f;  // the f32 path scaled q
  if (!diagonal) {
    double r = ak[0];
    for (int64_t j = 1; j < kb; ++j) r = std::max(r, ak[j]);
    if (r - t.mq[0] < kNegligible) return;  // M[t] >= M[i0]: every factor is below e^-104
    exp_diffs(ak, kb, r, t.xk);
    for (int64_t v = 0; v < nvq; ++v) {
      const __m512 arg = _mm512_sub_ps(_mm512_setzero_ps(), diff16(t.mq + 16 * v, r));  // R - M[t] <= 0
      _mm512_storeu_ps(t.yq + 16 * v, _mm512_mul_ps(exp16(arg), _mm512_set1_ps(scale)));
    }
  }
  if (pairs) {
    const int64_t w = Tile::pair_words(d);
    for (int64_t j = 0; j < kb; ++j)
      row_pairs(x.k.row<const uint16_t>(b, h, j0 + j), x.k.col_stride(), d.dqk, t.kp + j * w);
    value_pairs(x, b, h, j0, kb, t.vp);
    pair_gemm(t.st, kBlock, kb, nvq, t.kp, w, 1, t.qp, kBlock, w, false);
  } else {
    for (int64_t j = 0; j < kb; ++j) {
      sdpa::load_row<Fmt>(x.k.row<const T>(b, h, j0 + j), x.k.col_stride(), d.dqk, diagonal ? 1.0f : t.xk[j],
                          t.kf + j * dp, dp);
      sdpa::load_row<Fmt>(x.v.row<const T>(b, h, j0 + j), x.v.col_stride(), d.dv, 1.0f, t.vf + j * dvp, dvp);
    }
    sdpa::gemm(t.st, kBlock, kb, nvq, t.kf, dp, 1, t.qt, kBlock, d.dqk, false);
  }

  for (int64_t v = 0; v < nvq; ++v) {
    __m512 sum = _mm512_loadu_ps(t.rowsum + 16 * v);
    if (!diagonal) {
      const __m512 y = _mm512_loadu_ps(t.yq + 16 * v);
      for (int64_t j = 0; j < kb; ++j) {
        float* s = t.st + j * kBlock + 16 * v;
        const __m512 f = pairs ? _mm512_mul_ps(y, _mm512_set1_ps(t.xk[j])) : y;
        const __m512 c = _mm512_mul_ps(_mm512_loadu_ps(s), f);
        _mm512_storeu_ps(s, c);
        sum = _mm512_add_ps(sum, c);
      }
    } else {
      const int64_t lane0 = i0 + 16 * v;  // the query of lane 0
      for (int64_t j = 0; j < kb; ++j) {
        float* s = t.st + j * kBlock + 16 * v;
        const __mmask16 seen = sdpa::range_mask(lane0, j0 + j, i0 + nq);  // queries t >= s
        // a[s] - M[t] per query in float64, rounded once; masked lanes never reach the exponential.
        const __m512d as = _mm512_set1_pd(ak[j]);
        const __m512 arg = _mm512_maskz_mov_ps(seen, diff16(as, as, t.mq + 16 * v));
        const __m512 dm = _mm512_maskz_mov_ps(seen, _mm512_mul_ps(exp16(arg), _mm512_set1_ps(scale)));
        const __m512 c = _mm512_mul_ps(_mm512_loadu_ps(s), dm);
        _mm512_storeu_ps(s, c);
        sum = _mm512_add_ps(sum, c);
      }
    }
    _mm512_storeu_ps(t.rowsum + 16 * v, sum);
  }
  if (pairs) {
    // C~^T rows 2p, 2p + 1 (keys) into pair rows of 64 query lanes; acc += C~ V on pairs of keys.
    for (int64_t p = 0; 2 * p < kb; ++p)
      pairs_from_f32(t.st + 2 * p * kBlock, 2 * p + 1 < kb ? t.st + (2 * p + 1) * kBlock : nullptr, 16 * nvq,
                     t.cp + p * kBlock);
    pair_gemm(t.acc, dvp, nq, dvp / 16, t.cp, 1, kBlock, t.vp, dvp, (kb + 1) / 2, true);
  } else {
    // acc [nq x Dv] += C V: C read transposed out of C^T (query i at column i, key j at row j).
    sdpa::gemm(t.acc, dvp, nq, dvp / 16, t.st, 1, kBlock, t.vf, dvp, kb, true);
  }
}

// The ceiling an mLSTM kernel's products run against: bf16_dot where they run on pairs.
inline std::string compute_unit(const Problem& p, const DeviceRuntime&) {
  return p.dtype == DType::bf16 && has_native_bf16 ? "bf16_dot" : "f32_fma";
}

// Every problem mlstm_desc accepts runs (any strides and sizes); dtype and device are checked
// by register_kernel.
inline Status supports_problem(const Problem& p) {
  auto d = ops::mlstm_desc(p);
  return d ? Status::ok() : d.status();
}

}  // namespace dnnb::avx512::mlstm
