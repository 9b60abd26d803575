// AVX-512 sdpa: o = softmax(scale q k^T [softcap] + mask) v and the row logsumexp
// (docs/ops-family3.md, "Attention"), as a flash (online-softmax) loop on the f32 FMA units.
//
// One task per (batch, head, block of 64 queries), over OpenMP threads. The task packs its
// queries once, transposed and scaled (Qt [D x 64]: query i in lane i), then walks the key
// blocks of 64 that any of its queries sees (causal and window bounds skip the rest):
//   S^T [keys x queries] = K_blk Qt (keys broadcast, queries in lanes), then per lane (query)
//   the softcap, the mask, the visibility, the block's max, p = e^(s - m), the running sum;
//   the f32 accumulator O [64 x Dv] is rescaled by e^(m_old - m_new) and O += P V_blk.
// With queries in lanes, the softmax's max and sums are vertical (no horizontal reductions),
// and the products need no per-block transpose: K and V blocks are packed row-major (a
// conversion to f32), only Q is transposed, once per task. Scores, p and O stay in f32 (p is
// not rounded to the dtype); o = O / l is rounded once. A query with no visible key gets o = 0
// and lse = -inf.
#include "kernels/avx512/sdpa_tile.h"

namespace dnnb::avx512 {
namespace {

using sdpa::kBlock;
using sdpa::kNegInf;

struct Operands : sdpa::Inputs {
  sdpa::View o, lse;
};

template <class Fmt>
DNNB_AVX512 void forward_task(const Operands& x, int64_t b, int64_t h, int64_t i0) {
  using T = typename Fmt::storage;
  const ops::SdpaDesc& d = x.d;
  const auto [nq, nvq, kvh, dp, dvp] = sdpa::query_block(d, h, i0);
  sdpa::Arena& arena = sdpa::Arena::local();
  arena.reset(d.d * kBlock + kBlock * dp + kBlock * dvp * 2 + kBlock * kBlock * 2 + 3 * kBlock);
  float* qt = arena.take(d.d * kBlock);       // scaled queries, transposed
  float* kf = arena.take(kBlock * dp);        // the key block, row-major
  float* vf = arena.take(kBlock * dvp);       // the value block, row-major, padded
  float* st = arena.take(kBlock * kBlock);    // S^T, then P^T
  float* mt = arena.take(kBlock * kBlock);    // the mask block, transposed
  float* acc = arena.take(kBlock * dvp);      // O
  float* m = arena.take(kBlock);              // running max per query
  float* l = arena.take(kBlock);              // running sum per query
  float* alpha = arena.take(kBlock);          // this block's rescale per query

  const float scale = static_cast<float>(d.scale);
  // The query rows go through kf (not in use yet) to their transposed panel.
  sdpa::pack_rows_transposed<Fmt>(x.q, b, h, i0, nq, d.d, scale, kf, qt);
  std::fill(m, m + kBlock, kNegInf);
  std::fill(l, l + kBlock, 0.0f);
  std::fill(acc, acc + kBlock * dvp, 0.0f);

  const sdpa::ScoreFinish finish(d);
  const int64_t key_lo = sdpa::block_key_lo(d, i0), key_hi = sdpa::block_key_hi(d, i0 + nq);
  for (int64_t j0 = key_lo; j0 < key_hi; j0 += kBlock) {
    const int64_t kb = std::min(kBlock, key_hi - j0);
    sdpa::load_kv_rows<Fmt>(x, b, kvh, j0, kb, kf, vf);
    sdpa::gemm(st, kBlock, kb, nvq, kf, dp, 1, qt, kBlock, d.d, false);
    if (d.mask) sdpa::pack_mask_transposed<Fmt>(x.mask, i0, nq, j0, kb, mt);

    for (int64_t vq = 0; vq < nvq; ++vq) {
      const int64_t lane0 = i0 + 16 * vq;  // the query of lane 0
      // Scores: finished and masked to -inf where not visible; the block's max per query.
      __m512 block_max = _mm512_set1_ps(kNegInf);
      for (int64_t j = 0; j < kb; ++j) {
        float* s = st + j * kBlock + 16 * vq;
        const __mmask16 visible =
            sdpa::range_mask(lane0, sdpa::first_query(d, j0 + j), std::min(sdpa::end_query(d, j0 + j), i0 + nq));
        const __m512 z = finish(_mm512_loadu_ps(s), d.mask ? mt + j * kBlock + 16 * vq : nullptr, nullptr);
        const __m512 masked = _mm512_mask_mov_ps(_mm512_set1_ps(kNegInf), visible, z);
        _mm512_storeu_ps(s, masked);
        block_max = _mm512_max_ps(block_max, masked);
      }
      // The new max; where it is still -inf the shift is 0, so e^(-inf - 0) = 0 and alpha = 0.
      const __m512 m_old = _mm512_loadu_ps(m + 16 * vq);
      const __m512 m_new = _mm512_max_ps(m_old, block_max);
      const __mmask16 finite = _mm512_cmp_ps_mask(m_new, _mm512_set1_ps(kNegInf), _CMP_NEQ_OQ);
      const __m512 shift = _mm512_maskz_mov_ps(finite, m_new);
      const __m512 a = exp_ps(_mm512_sub_ps(m_old, shift));
      __m512 sum = _mm512_setzero_ps();
      for (int64_t j = 0; j < kb; ++j) {
        float* s = st + j * kBlock + 16 * vq;
        const __m512 p = exp_nonpositive<Accuracy::full>(Vecs<1>{{_mm512_sub_ps(_mm512_loadu_ps(s), shift)}}).v[0];
        _mm512_storeu_ps(s, p);
        sum = _mm512_add_ps(sum, p);
      }
      _mm512_storeu_ps(l + 16 * vq, _mm512_fmadd_ps(_mm512_loadu_ps(l + 16 * vq), a, sum));
      _mm512_storeu_ps(m + 16 * vq, m_new);
      _mm512_storeu_ps(alpha + 16 * vq, a);
    }
    for (int64_t i = 0; i < nq; ++i) {
      if (alpha[i] == 1.0f) continue;
      const __m512 a = _mm512_set1_ps(alpha[i]);
      float* o = acc + i * dvp;
      for (int64_t e = 0; e < dvp; e += 16) _mm512_storeu_ps(o + e, _mm512_mul_ps(_mm512_loadu_ps(o + e), a));
    }
    // O [nq x Dv] += P V: P read transposed out of P^T (query i at column i, key j at row j).
    sdpa::gemm(acc, dvp, nq, dvp / 16, st, 1, kBlock, vf, dvp, kb, true);
  }

  for (int64_t i = 0; i < nq; ++i) {
    const bool empty = !(l[i] > 0.0f);
    sdpa::store_row<Fmt>(x.o.row<T>(b, h, i0 + i), x.o.col_stride(), d.dv, acc + i * dvp, empty ? 0.0f : 1.0f / l[i]);
    float* lse = x.lse.row<float>(0, b, h) + (i0 + i) * x.lse.col_stride();
    *lse = empty ? kNegInf : m[i] + std::log(l[i]);
  }
}

Status run_sdpa(OpCall& call) {
  auto d = ops::sdpa_desc(call.problem);
  if (!d) return d.status();
  const size_t n_in = d->mask ? 4 : 3;
  if (call.inputs.size() != n_in || call.outputs.size() != 2)
    return Status::bad_input("avx512 sdpa: the signature has " + std::to_string(n_in) + " inputs and 2 outputs");
  Operands x;
  sdpa::bind_inputs(call, *d, x);
  x.o = sdpa::view_of(call.outputs[0]);
  x.lse = sdpa::view_of(call.outputs[1]);
  if (call.outputs[1].dtype != DType::f32) return Status::unsupported("avx512 sdpa: lse is not f32");
  const int64_t blocks = (d->sq + kBlock - 1) / kBlock;
  const int64_t tasks = d->batch * d->heads * blocks;
  const int64_t work = d->batch * d->heads * d->sq * d->sk;
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    parallel_tasks(tasks, work, [&](int64_t t) {
      const int64_t bh = t / blocks;
      forward_task<Fmt>(x, bh / d->heads, bh % d->heads, (t % blocks) * kBlock);
    });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("sdpa", {DType::f32, DType::f16, DType::bf16},
                              [](const Problem& p, const DeviceRuntime&) { return sdpa::supports_problem(p); }, run_sdpa));

}  // namespace
}  // namespace dnnb::avx512
