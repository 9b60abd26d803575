// AVX-512 sdpa_bwd: dq, dk, dv of attention from q, k, v[, mask], the forward's o and lse,
// and do (docs/ops-family3.md, "Attention"), on the f32 FMA units. As FlashAttention's
// backward, the probabilities are recomputed from the scores and lse, p = e^(s - lse), with
// D_i = do_i . o_i and dS = p (dP - D) (times the softcap's 1 - tanh^2), dP = do v^T.
//
// Three parallel passes, none with atomics:
// 0. per (batch, head): D_i and lse_i of every query, contiguous f32.
// 1. per (batch, head, block of 64 queries): dq, with scale q and do packed transposed once
//    per task (queries in lanes): S^T and dP^T [keys x queries] per key block, dQ += dS K
//    (dS read transposed out of dS^T). It also sums each query's e^(s_ij - lse_i) over its
//    visible keys, and both dq and pass 2 divide by that sum: the probabilities are then
//    normalised over the scores as this kernel computes them. Without it, a score's f32
//    rounding (half an ulp of a score of 100 is 4e-6) and lse's own rounding go straight into
//    p = e^(s - lse); with it they cancel for a dominant key, as in torch's softmax, which
//    f32's bound (2x torch's error) needs on peaked rows (scores of order 100).
// 2. per (batch, kv head, block of 64 keys): dk and dv of those keys in f32 scratch, summed
//    over every query head of the group and every query block that sees the keys. K and V are
//    packed transposed once per task (keys in lanes); per query block, S and dP
//    [queries x keys] come from packed rows of scale q and do, then dV += P^T do and
//    dK += dS^T (scale q) read P and dS transposed in place.
// Pass 2 recomputes S and dP (7 products per pair where a one-pass kernel with atomics does
// 5), which keeps every output written by one task. dq = scale dQ, dk = dK (q was scaled when
// packed), dv = dV, each rounded once.
#include "kernels/avx512/sdpa_tile.h"

namespace dnnb::avx512 {
namespace {

using sdpa::kBlock;
using sdpa::kNegInf;

struct Operands : sdpa::Inputs {
  sdpa::View o, dout, lse, dq, dk, dv;
  float* row_d = nullptr;     // D_i per (batch, head, query)
  float* row_lse = nullptr;   // lse_i per (batch, head, query)
  float* row_norm = nullptr;  // 1 / sum_j e^(s_ij - lse_i) per (batch, head, query)
  int64_t row_of(int64_t b, int64_t h, int64_t i) const { return (b * d.heads + h) * d.sq + i; }
};

// Pass 0: D_i = do_i . o_i (o as stored, in the dtype) and lse_i of one (batch, head).
template <class Fmt>
DNNB_AVX512 void row_stats_task(const Operands& x, int64_t b, int64_t h) {
  using T = typename Fmt::storage;
  const ops::SdpaDesc& d = x.d;
  const int64_t dvp = sdpa::pad16(d.dv);
  sdpa::Arena& arena = sdpa::Arena::local();
  arena.reset(2 * dvp);
  float* o = arena.take(dvp);
  float* g = arena.take(dvp);
  for (int64_t i = 0; i < d.sq; ++i) {
    sdpa::load_row<Fmt>(x.o.row<const T>(b, h, i), x.o.col_stride(), d.dv, 1.0f, o, dvp);
    sdpa::load_row<Fmt>(x.dout.row<const T>(b, h, i), x.dout.col_stride(), d.dv, 1.0f, g, dvp);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t e = 0; e < dvp; e += 16) sum = _mm512_fmadd_ps(_mm512_loadu_ps(o + e), _mm512_loadu_ps(g + e), sum);
    x.row_d[x.row_of(b, h, i)] = _mm512_reduce_add_ps(sum);
    x.row_lse[x.row_of(b, h, i)] = x.lse.row<const float>(0, b, h)[i * x.lse.col_stride()];
  }
}

// p and dS of 16 lanes from the scores s and dP: p = norm e^(s' - lse) where visible (0
// elsewhere), dS = p (dP - D) dcap, s' the finished score (softcap, mask), dcap the softcap's
// derivative.
struct ProbGrad {
  __m512 p, ds;
};
DNNB_AVX512_INLINE ProbGrad prob_grad(const sdpa::ScoreFinish& finish, __m512 s, const float* mask, __m512 dp,
                                      __m512 lse, __m512 norm, __m512 row_d, __mmask16 visible) {
  __m512 dcap;
  const __m512 z = finish(s, mask, &dcap);
  const __m512 p = _mm512_maskz_mul_ps(visible, exp_ps(_mm512_sub_ps(z, lse)), norm);
  return {p, _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(dp, row_d)), dcap)};
}

// Pass 2: dk and dv of keys [j0, j0 + kb) of kv head kvh.
template <class Fmt>
DNNB_AVX512 void key_block_task(const Operands& x, int64_t b, int64_t kvh, int64_t j0) {
  using T = typename Fmt::storage;
  const ops::SdpaDesc& d = x.d;
  const int64_t kb = std::min(kBlock, d.sk - j0), nvk = (kb + 15) / 16;
  const int64_t dp = sdpa::pad16(d.d), dvp = sdpa::pad16(d.dv);
  sdpa::Arena& arena = sdpa::Arena::local();
  arena.reset((d.d + d.dv) * kBlock + 2 * kBlock * (dp + dvp) + 2 * kBlock * kBlock + 2 * kBlock);
  float* kt = arena.take(d.d * kBlock);    // keys transposed: key j in lane j
  float* vt = arena.take(d.dv * kBlock);   // values transposed
  float* qs = arena.take(kBlock * dp);     // scale q of a query block, row-major
  float* dof = arena.take(kBlock * dvp);   // do of a query block, row-major
  float* s = arena.take(kBlock * kBlock);  // S, then P [queries x keys]
  float* dps = arena.take(kBlock * kBlock);  // dP, then dS
  float* dk = arena.take(kBlock * dp);
  float* dv = arena.take(kBlock * dvp);
  float* mrow = arena.take(kBlock);        // one row of the mask block
  // The keys' rows go through the query buffers (not in use yet) to their transposed panels.
  sdpa::pack_rows_transposed<Fmt>(x.k, b, kvh, j0, kb, d.d, 1.0f, qs, kt);
  sdpa::pack_rows_transposed<Fmt>(x.v, b, kvh, j0, kb, d.dv, 1.0f, dof, vt);
  std::fill(dk, dk + kBlock * dp, 0.0f);
  std::fill(dv, dv + kBlock * dvp, 0.0f);

  const sdpa::ScoreFinish finish(d);
  const float scale = static_cast<float>(d.scale);
  const int64_t i_lo = sdpa::first_query(d, j0), i_hi = sdpa::end_query(d, j0 + kb - 1);
  for (int64_t h = kvh * d.group(); h < (kvh + 1) * d.group(); ++h)
    for (int64_t i0 = i_lo; i0 < i_hi; i0 += kBlock) {
      const int64_t nq = std::min(kBlock, i_hi - i0);
      for (int64_t i = 0; i < nq; ++i) {
        sdpa::load_row<Fmt>(x.q.row<const T>(b, h, i0 + i), x.q.col_stride(), d.d, scale, qs + i * dp, dp);
        sdpa::load_row<Fmt>(x.dout.row<const T>(b, h, i0 + i), x.dout.col_stride(), d.dv, 1.0f, dof + i * dvp, dvp);
      }
      sdpa::gemm(s, kBlock, nq, nvk, qs, dp, 1, kt, kBlock, d.d, false);
      sdpa::gemm(dps, kBlock, nq, nvk, dof, dvp, 1, vt, kBlock, d.dv, false);
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t gi = i0 + i, r = x.row_of(b, h, gi);
        const float lse_i = x.row_lse[r];
        const bool empty = lse_i == kNegInf;  // no visible key: p = 0 throughout
        if (d.mask && !empty) {
          const int64_t cs = x.mask.col_stride();
          sdpa::load_row<Fmt>(x.mask.row<const T>(0, 0, gi) + j0 * cs, cs, kb, 1.0f, mrow, kBlock);
        }
        const int64_t lo = sdpa::first_key(d, gi), hi = std::min(sdpa::end_key(d, gi), j0 + kb);
        for (int64_t vk = 0; vk < nvk; ++vk) {
          const __mmask16 visible = empty ? 0 : sdpa::range_mask(j0 + 16 * vk, lo, hi);
          float* sp = s + i * kBlock + 16 * vk;
          float* dpp = dps + i * kBlock + 16 * vk;
          const ProbGrad pg = prob_grad(finish, _mm512_loadu_ps(sp), d.mask ? mrow + 16 * vk : nullptr,
                                        _mm512_loadu_ps(dpp), _mm512_set1_ps(empty ? 0.0f : lse_i),
                                        _mm512_set1_ps(x.row_norm[r]), _mm512_set1_ps(x.row_d[r]), visible);
          _mm512_storeu_ps(sp, pg.p);
          _mm512_storeu_ps(dpp, pg.ds);
        }
      }
      // dV [keys x Dv] += P^T do, dK [keys x D] += dS^T (scale q): P and dS read transposed.
      sdpa::gemm(dv, dvp, kb, dvp / 16, s, 1, kBlock, dof, dvp, nq, true);
      sdpa::gemm(dk, dp, kb, dp / 16, dps, 1, kBlock, qs, dp, nq, true);
    }

  for (int64_t j = 0; j < kb; ++j) {
    sdpa::store_row<Fmt>(x.dk.row<T>(b, kvh, j0 + j), x.dk.col_stride(), d.d, dk + j * dp, 1.0f);
    sdpa::store_row<Fmt>(x.dv.row<T>(b, kvh, j0 + j), x.dv.col_stride(), d.dv, dv + j * dvp, 1.0f);
  }
}

// Pass 1: dq of queries [i0, i0 + 64) of head h.
template <class Fmt>
DNNB_AVX512 void query_block_task(const Operands& x, int64_t b, int64_t h, int64_t i0) {
  using T = typename Fmt::storage;
  const ops::SdpaDesc& d = x.d;
  const auto [nq, nvq, kvh, dp, dvp] = sdpa::query_block(d, h, i0);
  sdpa::Arena& arena = sdpa::Arena::local();
  arena.reset((d.d + d.dv) * kBlock + kBlock * (3 * dp + dvp) + 3 * kBlock * kBlock + 3 * kBlock);
  float* qt = arena.take(d.d * kBlock);      // scale q transposed: query i in lane i
  float* dot = arena.take(d.dv * kBlock);    // do transposed
  float* kf = arena.take(kBlock * dp);       // the key block, row-major, padded
  float* vf = arena.take(kBlock * dvp);      // the value block, row-major
  float* st = arena.take(kBlock * kBlock);   // S^T, then dS^T [keys x queries]
  float* dpt = arena.take(kBlock * kBlock);  // dP^T
  float* mt = arena.take(kBlock * kBlock);   // the mask block, transposed
  float* dq = arena.take(kBlock * dp);
  float* lse = arena.take(kBlock);           // per lane; -inf past the block's queries
  float* row_d = arena.take(kBlock);
  float* sums = arena.take(kBlock);          // sum_j e^(s_ij - lse_i) per lane

  const float scale = static_cast<float>(d.scale);
  // q and do rows go through kf and vf (not in use yet) to their transposed panels.
  sdpa::pack_rows_transposed<Fmt>(x.q, b, h, i0, nq, d.d, scale, kf, qt);
  sdpa::pack_rows_transposed<Fmt>(x.dout, b, h, i0, nq, d.dv, 1.0f, vf, dot);
  for (int64_t i = 0; i < kBlock; ++i) {
    lse[i] = i < nq ? x.row_lse[x.row_of(b, h, i0 + i)] : kNegInf;
    row_d[i] = i < nq ? x.row_d[x.row_of(b, h, i0 + i)] : 0.0f;
  }
  std::fill(dq, dq + kBlock * dp, 0.0f);
  std::fill(sums, sums + kBlock, 0.0f);

  const sdpa::ScoreFinish finish(d);
  const __m512 one = _mm512_set1_ps(1.0f);
  const int64_t key_lo = sdpa::block_key_lo(d, i0), key_hi = sdpa::block_key_hi(d, i0 + nq);
  for (int64_t j0 = key_lo; j0 < key_hi; j0 += kBlock) {
    const int64_t kb = std::min(kBlock, key_hi - j0);
    sdpa::load_kv_rows<Fmt>(x, b, kvh, j0, kb, kf, vf);
    sdpa::gemm(st, kBlock, kb, nvq, kf, dp, 1, qt, kBlock, d.d, false);
    sdpa::gemm(dpt, kBlock, kb, nvq, vf, dvp, 1, dot, kBlock, d.dv, false);
    if (d.mask) sdpa::pack_mask_transposed<Fmt>(x.mask, i0, nq, j0, kb, mt);
    for (int64_t vq = 0; vq < nvq; ++vq) {
      const __m512 lse_v = _mm512_loadu_ps(lse + 16 * vq);
      const __mmask16 finite = _mm512_cmp_ps_mask(lse_v, _mm512_set1_ps(kNegInf), _CMP_NEQ_OQ);
      const __m512 shift = _mm512_maskz_mov_ps(finite, lse_v);
      const __m512 d_v = _mm512_loadu_ps(row_d + 16 * vq);
      __m512 sum = _mm512_loadu_ps(sums + 16 * vq);
      for (int64_t j = 0; j < kb; ++j) {
        const int64_t gj = j0 + j;
        const __mmask16 visible =
            finite & sdpa::range_mask(i0 + 16 * vq, sdpa::first_query(d, gj), std::min(sdpa::end_query(d, gj), i0 + nq));
        float* sp = st + j * kBlock + 16 * vq;
        const ProbGrad pg = prob_grad(finish, _mm512_loadu_ps(sp), d.mask ? mt + j * kBlock + 16 * vq : nullptr,
                                      _mm512_loadu_ps(dpt + j * kBlock + 16 * vq), shift, one, d_v, visible);
        _mm512_storeu_ps(sp, pg.ds);
        sum = _mm512_add_ps(sum, pg.p);
      }
      _mm512_storeu_ps(sums + 16 * vq, sum);
    }
    // dQ [queries x D] += dS K: dS read transposed out of dS^T.
    sdpa::gemm(dq, dp, nq, dp / 16, st, 1, kBlock, kf, dp, kb, true);
  }
  // The probabilities' normalisation: dq = scale dQ / sum, and the factor pass 2 applies.
  for (int64_t i = 0; i < nq; ++i) {
    const float norm = sums[i] > 0.0f ? 1.0f / sums[i] : 0.0f;
    x.row_norm[x.row_of(b, h, i0 + i)] = norm;
    sdpa::store_row<Fmt>(x.dq.row<T>(b, h, i0 + i), x.dq.col_stride(), d.d, dq + i * dp, scale * norm);
  }
}

Status run_sdpa_bwd(OpCall& call) {
  auto d = ops::sdpa_desc(call.problem);
  if (!d) return d.status();
  const size_t n_in = d->mask ? 7 : 6;
  if (call.inputs.size() != n_in || call.outputs.size() != 3)
    return Status::bad_input("avx512 sdpa_bwd: the signature has " + std::to_string(n_in) + " inputs and 3 outputs");
  if (call.inputs[n_in - 1].dtype != DType::f32) return Status::unsupported("avx512 sdpa_bwd: lse is not f32");
  Operands x;
  size_t i = sdpa::bind_inputs(call, *d, x);
  for (sdpa::View* v : {&x.o, &x.dout, &x.lse}) *v = sdpa::view_of(call.inputs[i++]);
  x.dq = sdpa::view_of(call.outputs[0]);
  x.dk = sdpa::view_of(call.outputs[1]);
  x.dv = sdpa::view_of(call.outputs[2]);
  const int64_t n_rows = d->batch * d->heads * d->sq;
  std::vector<float> rows(static_cast<size_t>(3 * n_rows));
  x.row_d = rows.data();
  x.row_lse = rows.data() + n_rows;
  x.row_norm = rows.data() + 2 * n_rows;

  const int64_t work = d->batch * d->heads * d->sq * d->sk;
  const int64_t q_blocks = (d->sq + kBlock - 1) / kBlock, k_blocks = (d->sk + kBlock - 1) / kBlock;
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    parallel_tasks(d->batch * d->heads, d->batch * d->heads * d->sq * d->dv,
                   [&](int64_t t) { row_stats_task<Fmt>(x, t / d->heads, t % d->heads); });
    parallel_tasks(d->batch * d->heads * q_blocks, work, [&](int64_t t) {
      const int64_t bh = t / q_blocks;
      query_block_task<Fmt>(x, bh / d->heads, bh % d->heads, (t % q_blocks) * kBlock);
    });
    parallel_tasks(d->batch * d->kv_heads * k_blocks, work, [&](int64_t t) {
      const int64_t bk = t / k_blocks;
      key_block_task<Fmt>(x, bk / d->kv_heads, bk % d->kv_heads, (t % k_blocks) * kBlock);
    });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("sdpa_bwd", {DType::f32, DType::f16, DType::bf16},
                              [](const Problem& p, const DeviceRuntime&) { return sdpa::supports_problem(p); },
                              run_sdpa_bwd));

}  // namespace
}  // namespace dnnb::avx512
