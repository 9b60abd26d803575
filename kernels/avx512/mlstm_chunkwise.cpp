// AVX-512 mlstm_chunkwise: the chunkwise mLSTM forward (docs/ops-family5.md), h and the last
// states c_last, n_last, m_last, as NX-AI's mlstm_kernels torch/chunkwise/native/fw.py
// computes them (return_last_states=True), on the f32 FMA units.
//
// One task per (batch, head) walks its chunks of L tokens in order (the last one may be
// shorter), keeping the state C [DQK x DV], n [DQK] (f32) and its stabiliser m (float64, 0 at
// the start as in the package). In chunk k, with b the chunk's own cumulative log-forget gate
// and a'[s] = i[s] - b[s]:
//   outputs: the combined stabiliser of query l is b[l] + Mc[l], Mc[l] = max(m, max_{s<=l} a'[s]);
//     the intra-chunk part is the parallel form over the chunk's keys with D = e^(a'[s] - Mc[l])
//     (mlstm_tile.h's attend_block), the inter-chunk part adds e^(m - Mc[l]) (scale q_l) C and
//     (scale q_l) . n before it; n_l = max(|den|, e^-(b[l] + Mc[l])), h = num / (n_l + eps);
//   state: with g = b[L-1] and a_l = g + a'[l], m' = max(g + m, max_l a_l),
//     C' = e^(g + m - m') C + sum_l e^(a_l - m') k_l v_l^T, n' likewise with k_l, m = m'.
// The state product C' += K'^T V is one GEMM per key block (the scaled keys read transposed
// out of their row-major block). Gates and stabilisers are float64 (mlstm_tile.h says why).
// bf16 on a CPU with AVX512_BF16 runs every product on VDPBF16PS pairs (mlstm_bf16.h): q, k, v
// as stored, C~ and the state's C and abar k rounded to bf16 for their products.
#include <vector>

#include "kernels/avx512/mlstm_tile.h"

namespace dnnb::avx512 {
namespace {

using mlstm::kBlock;

struct Operands : mlstm::Inputs {
  mlstm::View out_h, c_last, n_last, m_last;
};

template <class Fmt>
DNNB_AVX512 void head_task(const Operands& x, int64_t b, int64_t h) {
  using T = typename Fmt::storage;
  const ops::MlstmDesc& d = x.d;
  const int64_t dp = mlstm::pad16(d.dqk), dvp = mlstm::pad16(d.dv), L = std::min(d.chunk, d.s);

  sdpa::Arena& arena = sdpa::Arena::local();
  const bool pairs = mlstm::use_pairs<Fmt>();
  const int64_t w = mlstm::Tile::pair_words(d);
  arena.reset(mlstm::Tile::floats(d) + d.dqk * dvp + dp + 6 * L + w * dvp + kBlock / 2 * dp);
  const mlstm::Tile t(arena, d);
  float* cst = arena.take(d.dqk * dvp);  // C, rows of DV padded
  float* nst = arena.take(dp);           // n
  double* bl = reinterpret_cast<double*>(arena.take(6 * L));  // b of the chunk
  double* ap = bl + L;                                        // a' = i - b
  double* mc = ap + L;                                        // Mc
  // Pairs: C's rows (q C, DQK / 2 x DV) and the scaled keys' columns (K'^T V, 32 x DQK).
  uint32_t* cpairs = reinterpret_cast<uint32_t*>(arena.take(w * dvp + kBlock / 2 * dp));
  uint32_t* kpairs = cpairs + w * dvp;
  std::fill(cst, cst + d.dqk * dvp, 0.0f);
  std::fill(nst, nst + dp, 0.0f);
  double m = 0.0;

  for (int64_t c0 = 0; c0 < d.s; c0 += L) {
    const int64_t lk = std::min(L, d.s - c0);
    double cum = 0.0, run = -std::numeric_limits<double>::infinity();
    for (int64_t l = 0; l < lk; ++l) {
      cum += mlstm::log_sigmoid(mlstm::gate(x.f, b, h, c0 + l));
      bl[l] = cum;
      ap[l] = static_cast<double>(mlstm::gate(x.i, b, h, c0 + l)) - cum;
      run = std::max(run, ap[l]);
      mc[l] = std::max(m, run);
    }

    if (pairs)  // C rounded to bf16 once per chunk for the products with q
      for (int64_t p = 0; p < w; ++p)
        mlstm::pairs_from_f32(cst + 2 * p * dvp, 2 * p + 1 < d.dqk ? cst + (2 * p + 1) * dvp : nullptr, dvp,
                              cpairs + p * dvp);
    for (int64_t i0 = c0; i0 < c0 + lk; i0 += kBlock) {
      const int64_t nq = std::min(kBlock, c0 + lk - i0), l0 = i0 - c0;
      mlstm::pack_queries<Fmt>(x, b, h, t, i0, nq);
      for (int64_t i = 0; i < kBlock; ++i) t.mq[i] = mc[l0 + std::min(i, nq - 1)];
      // Inter-chunk: acc = (scale Q) C and rowsum = (scale Q) n, each query's row times e^(m - Mc)
      // (on pairs, Q is unscaled and the scale joins that factor).
      if (pairs)
        mlstm::pair_gemm(t.acc, dvp, nq, dvp / 16, t.qp, 1, kBlock, cpairs, dvp, w, false);
      else
        sdpa::gemm(t.acc, dvp, nq, dvp / 16, t.qt, 1, kBlock, cst, dvp, d.dqk, false);
      for (int64_t i = 0; i < nq; ++i) {
        float qn = 0.0f;
        if (pairs) {
          for (int64_t p = 0; p < w; ++p) {
            const uint32_t word = t.qp[p * kBlock + i];
            qn += bf16_to_f32(static_cast<uint16_t>(word)) * nst[2 * p] + bf16_to_f32(static_cast<uint16_t>(word >> 16)) * nst[2 * p + 1];
          }
        } else {
          for (int64_t e = 0; e < d.dqk; ++e) qn += t.qt[e * kBlock + i] * nst[e];
        }
        const float bbar = static_cast<float>(std::exp(m - t.mq[i]) * (pairs ? d.scale() : 1.0));
        t.rowsum[i] = qn * bbar;
        float* row = t.acc + i * dvp;
        const __m512 f = _mm512_set1_ps(bbar);
        for (int64_t e = 0; e < dvp; e += 16) _mm512_storeu_ps(row + e, _mm512_mul_ps(_mm512_loadu_ps(row + e), f));
      }
      // Intra-chunk: the chunk's keys up to the block's last query.
      for (int64_t j0 = c0; j0 < i0 + nq; j0 += kBlock)
        mlstm::attend_block<Fmt>(x, b, h, t, i0, nq, j0, std::min(kBlock, i0 + nq - j0), ap + (j0 - c0));
      for (int64_t i = 0; i < nq; ++i) {
        const double n = std::max(std::fabs(static_cast<double>(t.rowsum[i])), std::exp(-(bl[l0 + i] + mc[l0 + i])));
        mlstm::store_scaled<Fmt>(x.out_h.row<T>(b, h, i0 + i), x.out_h.col_stride(), d.dv, t.acc + i * dvp,
                                 1.0 / (n + d.eps));
      }
    }

    // The state after the chunk.
    const double g = bl[lk - 1], m_next = std::max(g + m, g + run);
    const float gbar = static_cast<float>(std::exp(g + m - m_next));
    const __m512 gv = _mm512_set1_ps(gbar);
    for (int64_t e = 0; e < d.dqk * dvp; e += 16) _mm512_storeu_ps(cst + e, _mm512_mul_ps(_mm512_loadu_ps(cst + e), gv));
    for (int64_t e = 0; e < dp; e += 16) _mm512_storeu_ps(nst + e, _mm512_mul_ps(_mm512_loadu_ps(nst + e), gv));
    for (int64_t j0 = c0; j0 < c0 + lk; j0 += kBlock) {
      const int64_t kb = std::min(kBlock, c0 + lk - j0);
      for (int64_t j = 0; j < kb; ++j) {
        const float abar = static_cast<float>(std::exp(g + ap[j0 - c0 + j] - m_next));
        float* krow = t.kf + j * dp;
        sdpa::load_row<Fmt>(x.k.row<const T>(b, h, j0 + j), x.k.col_stride(), d.dqk, abar, krow, dp);
        if (!pairs) sdpa::load_row<Fmt>(x.v.row<const T>(b, h, j0 + j), x.v.col_stride(), d.dv, 1.0f, t.vf + j * dvp, dvp);
        for (int64_t e = 0; e < dp; e += 16) _mm512_storeu_ps(nst + e, _mm512_add_ps(_mm512_loadu_ps(nst + e), _mm512_loadu_ps(krow + e)));
      }
      // C [DQK x DV] += K'^T V: K' read transposed out of its row-major block (on pairs: K'
      // rounded to bf16 as pairs of consecutive keys, V likewise).
      if (pairs) {
        for (int64_t p = 0; 2 * p < kb; ++p)
          mlstm::pairs_from_f32(t.kf + 2 * p * dp, 2 * p + 1 < kb ? t.kf + (2 * p + 1) * dp : nullptr, dp, kpairs + p * dp);
        mlstm::value_pairs(x, b, h, j0, kb, t.vp);
        mlstm::pair_gemm(cst, dvp, d.dqk, dvp / 16, kpairs, 1, dp, t.vp, dvp, (kb + 1) / 2, true);
      } else {
        sdpa::gemm(cst, dvp, d.dqk, dvp / 16, t.kf, 1, dp, t.vf, dvp, kb, true);
      }
    }
    m = m_next;
  }

  for (int64_t e = 0; e < d.dqk; ++e) {
    float* row = x.c_last.row<float>(b, h, e);
    for (int64_t v = 0; v < d.dv; ++v) row[v * x.c_last.col_stride()] = cst[e * dvp + v];
    mlstm::gate(x.n_last, b, h, e) = nst[e];
  }
  x.m_last.row<float>(0, 0, b)[h * x.m_last.col_stride()] = static_cast<float>(m);
}

Status run_mlstm_chunkwise(OpCall& call) {
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 5 || call.outputs.size() != 4)
    return Status::bad_input(
        "avx512 mlstm_chunkwise: the signature has 5 inputs (q, k, v, i, f) and 4 outputs (h, c_last, n_last, m_last)");
  Operands x;
  DNNB_TRY(mlstm::bind_inputs(call, *d, x, "mlstm_chunkwise"));
  for (size_t o = 1; o < 4; ++o)
    if (call.outputs[o].dtype != DType::f32)
      return Status::bad_input("avx512 mlstm_chunkwise: the states c_last, n_last, m_last must be f32");
  x.out_h = mlstm::view_of(call.outputs[0]);
  x.c_last = mlstm::view_of(call.outputs[1]);
  x.n_last = mlstm::view_of(call.outputs[2]);
  x.m_last = mlstm::view_of(call.outputs[3]);

  const int64_t heads = d->batch * d->heads;
  const int64_t work = heads * d->s * (d->chunk + d->dqk) * (d->dqk + d->dv);
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    parallel_tasks(heads, work, [&](int64_t bh) { head_task<Fmt>(x, bh / d->heads, bh % d->heads); });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("mlstm_chunkwise", {DType::f32, DType::f16, DType::bf16},
                              [](const Problem& p, const DeviceRuntime&) { return mlstm::supports_problem(p); },
                              run_mlstm_chunkwise, "", "", mlstm::compute_unit));

}  // namespace
}  // namespace dnnb::avx512
