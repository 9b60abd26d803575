// AVX-512 mlstm_step: one recurrent mLSTM step for decode (docs/ops-family5.md), as NX-AI's
// mlstm_kernels torch/recurrent/native_step.py: from the state (C, n, m) and one token's
// q, k, v, i, f,
//   m' = max(logsigmoid(f) + m, i), F = e^(logsigmoid(f) + m - m'), I = e^(i - m'),
//   C' = F C + I k v^T, n' = F n + I k, h = (scale q) C' / (max(|(scale q) . n'|, e^-m') + eps).
// One task per (batch, head). The step is bound by the state's bytes (C read and written once,
// DQK x DV f32): one pass over C's rows writes each new row and adds (scale q[e]) times it to
// h's accumulator, so C' is never read back; C' goes out with non-temporal stores when the
// state passes the last-level cache (stream_output), which saves the read for ownership of
// every line written. Gate arithmetic in float64.
#include "kernels/avx512/mlstm_tile.h"

namespace dnnb::avx512 {
namespace {

struct Operands : mlstm::Inputs {
  mlstm::View c, n, m;              // the state read
  mlstm::View out_h, c_new, n_new, m_new;  // h and the state written (may be c, n, m themselves)
  bool stream = false;  // C' with non-temporal stores (stream_output: a state past the LLC)
};

template <class Fmt>
DNNB_AVX512 void step_task(const Operands& x, int64_t b, int64_t h) {
  using T = typename Fmt::storage;
  const ops::MlstmDesc& d = x.d;
  const int64_t dvp = mlstm::pad16(d.dv), dp = mlstm::pad16(d.dqk);
  sdpa::Arena& arena = sdpa::Arena::local();
  arena.reset(3 * dp + 2 * dvp);
  float* qs = arena.take(dp);   // scale q
  float* kf = arena.take(dp);   // k
  float* vf = arena.take(dvp);  // v
  float* hacc = arena.take(dvp);
  sdpa::load_row<Fmt>(x.q.row<const T>(0, b, h), x.q.col_stride(), d.dqk, static_cast<float>(d.scale()), qs, dp);
  sdpa::load_row<Fmt>(x.k.row<const T>(0, b, h), x.k.col_stride(), d.dqk, 1.0f, kf, dp);
  sdpa::load_row<Fmt>(x.v.row<const T>(0, b, h), x.v.col_stride(), d.dv, 1.0f, vf, dvp);
  std::fill(hacc, hacc + dvp, 0.0f);

  const double m_old = x.m.row<float>(0, 0, b)[h * x.m.col_stride()];
  const double lf = mlstm::log_sigmoid(x.f.row<float>(0, 0, b)[h * x.f.col_stride()]);
  const double ig = x.i.row<float>(0, 0, b)[h * x.i.col_stride()];
  const double m_new = std::max(lf + m_old, ig);
  const float fg = static_cast<float>(std::exp(lf + m_old - m_new)), ii = static_cast<float>(std::exp(ig - m_new));

  const __m512 fv = _mm512_set1_ps(fg);
  const int64_t cs = x.c.col_stride(), ncs = x.c_new.col_stride();
  const bool stream = x.stream;
  float qn = 0.0f;
  for (int64_t e = 0; e < d.dqk; ++e) {
    const float* src = x.c.row<const float>(b, h, e);
    float* dst = x.c_new.row<float>(b, h, e);
    const __m512 ik = _mm512_set1_ps(ii * kf[e]), q = _mm512_set1_ps(qs[e]);
    if (cs == 1 && ncs == 1) {
      int64_t v = 0;
      for (; v + 16 <= d.dv; v += 16) {
        const __m512 c = _mm512_fmadd_ps(ik, _mm512_loadu_ps(vf + v), _mm512_mul_ps(fv, _mm512_loadu_ps(src + v)));
        if (stream && reinterpret_cast<uintptr_t>(dst + v) % 64 == 0)
          _mm512_stream_ps(dst + v, c);
        else
          _mm512_storeu_ps(dst + v, c);
        _mm512_storeu_ps(hacc + v, _mm512_fmadd_ps(q, c, _mm512_loadu_ps(hacc + v)));
      }
      if (v < d.dv) {
        const __mmask16 tm = tail_mask(d.dv - v);
        const __m512 c = _mm512_fmadd_ps(ik, _mm512_loadu_ps(vf + v), _mm512_mul_ps(fv, _mm512_maskz_loadu_ps(tm, src + v)));
        _mm512_mask_storeu_ps(dst + v, tm, c);
        _mm512_storeu_ps(hacc + v, _mm512_fmadd_ps(q, _mm512_maskz_mov_ps(tm, c), _mm512_loadu_ps(hacc + v)));
      }
    } else {
      for (int64_t v = 0; v < d.dv; ++v) {
        const float c = ii * kf[e] * vf[v] + fg * src[v * cs];
        dst[v * ncs] = c;
        hacc[v] += qs[e] * c;
      }
    }
    float& nn = mlstm::gate(x.n_new, b, h, e);
    nn = fg * mlstm::gate(x.n, b, h, e) + ii * kf[e];
    qn += qs[e] * nn;
  }
  const double den = std::max(std::fabs(static_cast<double>(qn)), std::exp(-m_new));
  mlstm::store_scaled<Fmt>(x.out_h.row<T>(0, b, h), x.out_h.col_stride(), d.dv, hacc, 1.0 / (den + d.eps));
  x.m_new.row<float>(0, 0, b)[h * x.m_new.col_stride()] = static_cast<float>(m_new);
}

Status run_mlstm_step(OpCall& call) {
  auto d = ops::mlstm_desc(call.problem);
  if (!d) return d.status();
  if (call.inputs.size() != 8 || call.outputs.size() != 4)
    return Status::bad_input(
        "avx512 mlstm_step: the signature has 8 inputs (q, k, v, i, f, c, n, m) and 4 outputs (h, c_new, n_new, m_new)");
  Operands x;
  DNNB_TRY(mlstm::bind_inputs(call, *d, x, "mlstm_step"));
  const char* names[] = {"c", "n", "m"};
  for (size_t s = 0; s < 3; ++s)
    if (call.inputs[5 + s].dtype != DType::f32 || call.outputs[1 + s].dtype != DType::f32)
      return Status::bad_input(std::string("avx512 mlstm_step: the state ") + names[s] + " (in and out) must be f32");
  x.c = mlstm::view_of(call.inputs[5]);
  x.n = mlstm::view_of(call.inputs[6]);
  x.m = mlstm::view_of(call.inputs[7]);
  x.out_h = mlstm::view_of(call.outputs[0]);
  x.c_new = mlstm::view_of(call.outputs[1]);
  x.n_new = mlstm::view_of(call.outputs[2]);
  x.m_new = mlstm::view_of(call.outputs[3]);

  const int64_t heads = d->batch * d->heads;
  const int64_t state_bytes = heads * d->dqk * d->dv * 4;
  x.stream = stream_output(state_bytes, state_bytes);
  return with_format(call.problem.dtype, [&](auto fmt) {
    using Fmt = decltype(fmt);
    parallel_tasks(heads, heads * d->dqk * d->dv, [&](int64_t bh) { step_task<Fmt>(x, bh / d->heads, bh % d->heads); });
    return Status::ok();
  });
}

DNNB_REGISTER(register_kernel("mlstm_step", {DType::f32, DType::f16, DType::bf16},
                              [](const Problem& p, const DeviceRuntime&) { return mlstm::supports_problem(p); },
                              run_mlstm_step));

}  // namespace
}  // namespace dnnb::avx512
