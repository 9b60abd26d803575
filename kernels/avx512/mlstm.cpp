// AVX-512 mlstm: the parallel stabilised mLSTM forward (docs/ops-family5.md), h, n, m from
// q, k, v, i, f, as NX-AI's mlstm_kernels torch/parallel/native/fw.py defines them, in one
// pass over the keys: f32 FMAs, or for bf16 on a CPU with AVX512_BF16 VDPBF16PS on pairs
// (mlstm_bf16.h: q and k as stored, C~ rounded to bf16 for C~ v).
//
// The stabiliser needs no online rescaling: with a[s] = i[s] - c[s] and c the cumulative
// log-forget gate, logD[t, s] = c[t] + a[s] for s <= t, so m[t] = c[t] + M[t] with the prefix
// max M[t] = max_{s <= t} a[s] and D[t, s] = e^(a[s] - M[t]) <= 1. A pre-pass per head takes
// a, M and m in float64 (mlstm_tile.h says why float64).
//
// One task per (batch, head, block of 64 queries), like sdpa: queries packed once, scaled and
// transposed (query i in lane i); per key block of 64, S^T = K Qt, C = S D, the row sums of C
// and acc += C V. Blocks wholly below the diagonal factor D: with R the block's max of a,
// D[t, s] = e^(a[s] - R) e^(R - M[t]), both factors <= 1 (R <= M[t] there), so the key
// factor scales the key rows as they are packed and the query factor is one multiply per lane;
// a block whose query factors all lie below e^-104 is skipped (it adds nothing in f32). The
// diagonal block takes D per element (masked by causality). Finally
// n = max(|row sum|, e^-m) and h = acc / (n + eps) (in float64 for the factor).
#include <vector>

#include "kernels/avx512/mlstm_tile.h"

namespace dnnb::avx512 {
namespace {

using mlstm::kBlock;

struct Operands : mlstm::Inputs {
  mlstm::View out_h, out_n, out_m;
  const double* a = nullptr;   // [B * NH * S]: i - c
  const double* mx = nullptr;  // [B * NH * S]: prefix max of a
  const double* md = nullptr;  // [B * NH * S]: m in float64
};

template <class Fmt>
DNNB_AVX512 void forward_task(const Operands& x, int64_t b, int64_t h, int64_t i0) {
  using T = typename Fmt::storage;
  const ops::MlstmDesc& d = x.d;
  const int64_t nq = std::min(kBlock, d.s - i0), dvp = mlstm::pad16(d.dv);
  const int64_t head = (b * d.heads + h) * d.s;
  const double* a = x.a + head;
  const double* mx = x.mx + head;

  sdpa::Arena& arena = sdpa::Arena::local();
  arena.reset(mlstm::Tile::floats(d));
  const mlstm::Tile t(arena, d);
  mlstm::pack_queries<Fmt>(x, b, h, t, i0, nq);
  std::fill(t.acc, t.acc + kBlock * dvp, 0.0f);
  std::fill(t.rowsum, t.rowsum + kBlock, 0.0f);
  // Lanes past the block repeat the last query's M: their scores are 0 (zero query lanes).
  for (int64_t i = 0; i < kBlock; ++i) t.mq[i] = mx[i0 + std::min(i, nq - 1)];

  // Causal: the keys up to the block's last query.
  for (int64_t j0 = 0; j0 < i0 + nq; j0 += kBlock)
    mlstm::attend_block<Fmt>(x, b, h, t, i0, nq, j0, std::min(kBlock, i0 + nq - j0), a + j0);

  const double* md = x.md + head;
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t q = i0 + i;
    const double n = std::max(std::fabs(static_cast<double>(t.rowsum[i])), std::exp(-md[q]));
    mlstm::store_scaled<Fmt>(x.out_h.row<T>(b, h, q), x.out_h.col_stride(), d.dv, t.acc + i * dvp, 1.0 / (n + d.eps));
    mlstm::gate(x.out_n, b, h, q) = static_cast<float>(n);
  }
}

Status run_mlstm(OpCall& call) {
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 5 || call.outputs.size() != 3)
    return Status::bad_input("avx512 mlstm: the signature has 5 inputs (q, k, v, i, f) and 3 outputs (h, n, m)");
  Operands x;
  DNNB_TRY(mlstm::bind_inputs(call, *d, x, "mlstm"));
  x.out_h = mlstm::view_of(call.outputs[0]);
  x.out_n = mlstm::view_of(call.outputs[1]);
  x.out_m = mlstm::view_of(call.outputs[2]);
  if (call.outputs[1].dtype != DType::f32 || call.outputs[2].dtype != DType::f32)
    return Status::bad_input("avx512 mlstm: outputs n and m must be f32");

  const int64_t heads = d->batch * d->heads;
  std::vector<double> gates(static_cast<size_t>(3 * heads * d->s));
  x.a = gates.data();
  x.mx = x.a + heads * d->s;
  x.md = x.mx + heads * d->s;
  parallel_tasks(heads, heads * d->s, [&](int64_t bh) {
    const int64_t off = bh * d->s, b = bh / d->heads, h = bh % d->heads;
    double* md = gates.data() + 2 * heads * d->s + off;
    mlstm::head_gates(x, b, h, gates.data() + off, gates.data() + heads * d->s + off, md);
    for (int64_t t = 0; t < d->s; ++t) mlstm::gate(x.out_m, b, h, t) = static_cast<float>(md[t]);
  });

  // Query blocks in the order 0, last, 1, last - 1, ...: a thread's contiguous range of tasks
  // (schedule static) then mixes short and long causal rows.
  const int64_t blocks = (d->s + kBlock - 1) / kBlock;
  const int64_t tasks = heads * blocks;
  const int64_t work = heads * d->s * (d->s + 1) / 2 * (d->dqk + d->dv);
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    parallel_tasks(tasks, work, [&](int64_t t) {
      const int64_t bh = t / blocks, k = t % blocks;
      const int64_t blk = k % 2 == 0 ? k / 2 : blocks - 1 - k / 2;
      forward_task<Fmt>(x, bh / d->heads, bh % d->heads, blk * kBlock);
    });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("mlstm", {DType::f32, DType::f16, DType::bf16},
                              [](const Problem& p, const DeviceRuntime&) { return mlstm::supports_problem(p); }, run_mlstm,
                              "", "", mlstm::compute_unit));

}  // namespace
}  // namespace dnnb::avx512
