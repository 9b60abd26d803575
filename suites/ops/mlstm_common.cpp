#include "suites/ops/mlstm_common.h"

#include <cmath>

#include "core/host_device.h"
#include "reference/mlstm.h"
#include "suites/ops/op_common.h"

namespace dnnb::ops {

Result<Signature> mlstm_signature(const Problem& p) {
  DNNB_TRY(check_problem(p, float_dtypes(), mlstm_param_keys(), 4));
  auto d = mlstm_desc(p);
  if (!d) return d.status();
  const Shape gate = mlstm_gate_shape(*d);
  Signature sig;
  if (p.op == "mlstm_step") {
    if (d->s != 1)
      return Status::bad_input(p.op + ": the shape's S is " + std::to_string(d->s) + "; a step takes one token (S = 1)");
    const Shape qk{d->batch, d->heads, d->dqk}, v{d->batch, d->heads, d->dv}, g{d->batch, d->heads};
    sig.inputs = {tensor_spec("q", p.dtype, qk),
                  tensor_spec("k", p.dtype, qk),
                  tensor_spec("v", p.dtype, v),
                  tensor_spec("i", DType::f32, g),
                  tensor_spec("f", DType::f32, g),
                  tensor_spec("c", DType::f32, mlstm_c_state_shape(*d)),
                  tensor_spec("n", DType::f32, mlstm_n_state_shape(*d)),
                  tensor_spec("m", DType::f32, mlstm_m_state_shape(*d))};
    sig.outputs = {tensor_spec("h", p.dtype, v),
                   tensor_spec("c_new", DType::f32, mlstm_c_state_shape(*d)),
                   tensor_spec("n_new", DType::f32, mlstm_n_state_shape(*d)),
                   tensor_spec("m_new", DType::f32, mlstm_m_state_shape(*d))};
    DNNB_TRY(apply_layout(p, sig.inputs[0]));
    return sig;
  }
  sig.inputs = {tensor_spec("q", p.dtype, mlstm_qk_shape(*d)), tensor_spec("k", p.dtype, mlstm_qk_shape(*d)),
                tensor_spec("v", p.dtype, mlstm_v_shape(*d)), tensor_spec("i", DType::f32, gate),
                tensor_spec("f", DType::f32, gate)};
  if (p.op == "mlstm") {
    sig.outputs = {tensor_spec("h", p.dtype, mlstm_v_shape(*d)), tensor_spec("n", DType::f32, gate),
                   tensor_spec("m", DType::f32, gate)};
  } else if (p.op == "mlstm_chunkwise") {
    sig.outputs = {tensor_spec("h", p.dtype, mlstm_v_shape(*d)),
                   tensor_spec("c_last", DType::f32, mlstm_c_state_shape(*d)),
                   tensor_spec("n_last", DType::f32, mlstm_n_state_shape(*d)),
                   tensor_spec("m_last", DType::f32, mlstm_m_state_shape(*d))};
  } else if (p.op == "mlstm_bwd") {
    sig.inputs.push_back(tensor_spec("dh", p.dtype, mlstm_v_shape(*d)));
    sig.inputs.push_back(tensor_spec("n", DType::f32, gate));
    sig.inputs.push_back(tensor_spec("m", DType::f32, gate));
    sig.outputs = {tensor_spec("dq", p.dtype, mlstm_qk_shape(*d)), tensor_spec("dk", p.dtype, mlstm_qk_shape(*d)),
                   tensor_spec("dv", p.dtype, mlstm_v_shape(*d)), tensor_spec("di", DType::f32, gate),
                   tensor_spec("df", DType::f32, gate)};
  } else {
    return Status::bad_input("mlstm_signature: op " + p.op + " is not an mLSTM op");
  }
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

void mlstm_draw_gates(const std::string& gates, int64_t s, int64_t length, Rng& rng, double& i, double& f) {
  const double zi = rng.normal(), zf = rng.normal();
  std::string mode = gates;
  if (gates == "mixed") {
    static const char* const kCycle[] = {"normal", "f_low", "f_high", "neg_i"};
    mode = kCycle[(s / 16) % 4];
  }
  i = zi;
  f = zf + 2;
  if (mode == "neg_i" && (gates == "mixed" || s < (length + 1) / 2)) i = zi * 2 - 12;
  if (mode == "f_low") f = zf - 8;
  if (mode == "f_high") f = zf + 8;
}

namespace {

void fill_normal(Tensor& t, Rng& rng) {
  for (int64_t e = 0; e < t.numel(); ++e) store_element(t.host_data(), t.dtype, e, rng.normal());
}

// Gates of [rows, S] rows (every (batch, head) draws its own sequence).
void fill_gates(const MlstmDesc& d, int64_t length, Tensor& i, Tensor& f, Rng& rng) {
  for (int64_t r = 0; r < i.numel() / length; ++r)
    for (int64_t s = 0; s < length; ++s) {
      double gi, gf;
      mlstm_draw_gates(d.gates, s, length, rng, gi, gf);
      store_element(i.host_data(), i.dtype, r * length + s, gi);
      store_element(f.host_data(), f.dtype, r * length + s, gf);
    }
}

// A value rounded to `dtype` (as a stored input holds it).
double round_to(DType dtype, double x) {
  unsigned char bytes[8];
  store_element(bytes, dtype, 0, x);
  return load_element(bytes, dtype, 0);
}

// mlstm_step's state: the recurrence from the zero state over kStepPrefix random tokens (k, v
// rounded to the dtype, gates to f32), then the step's own token at position kStepPrefix of the
// gate fill.
Status fill_step(const MlstmDesc& d, std::vector<Tensor>& inputs, Rng& rng) {
  const int64_t rows = d.batch * d.heads, length = kStepPrefix + 1;
  std::vector<double> k(rows * kStepPrefix * d.dqk), v(rows * kStepPrefix * d.dv), gi(rows * kStepPrefix),
      gf(rows * kStepPrefix);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < kStepPrefix; ++s) {
      for (int64_t e = 0; e < d.dqk; ++e) k[(r * kStepPrefix + s) * d.dqk + e] = round_to(inputs[1].dtype, rng.normal());
      for (int64_t e = 0; e < d.dv; ++e) v[(r * kStepPrefix + s) * d.dv + e] = round_to(inputs[2].dtype, rng.normal());
      double a, b;
      mlstm_draw_gates(d.gates, s, length, rng, a, b);
      gi[r * kStepPrefix + s] = round_to(DType::f32, a);
      gf[r * kStepPrefix + s] = round_to(DType::f32, b);
    }
  DNNB_TRY(reference::mlstm_recurrent_state(d, k, v, gi, gf, kStepPrefix, inputs[5], inputs[6], inputs[7]));
  for (size_t t = 0; t < 3; ++t) fill_normal(inputs[t], rng);
  for (int64_t r = 0; r < rows; ++r) {
    double a, b;
    mlstm_draw_gates(d.gates, kStepPrefix, length, rng, a, b);
    store_element(inputs[3].host_data(), DType::f32, r, a);
    store_element(inputs[4].host_data(), DType::f32, r, b);
  }
  return Status::ok();
}

// The backward's n and m above the reference's FLOP limit (bench sizes, which check does not
// run against the reference): n = 1 + |normal|, m = normal, the scale of a forward's.
void fill_standin_forward(Tensor& n, Tensor& m, Rng& rng) {
  for (int64_t e = 0; e < n.numel(); ++e) {
    store_element(n.host_data(), n.dtype, e, 1 + std::fabs(rng.normal()));
    store_element(m.host_data(), m.dtype, e, rng.normal());
  }
}

}  // namespace

Status fill_mlstm_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
  auto d = mlstm_desc(p);
  if (!d) return d.status();
  if (p.op == "mlstm_step") return fill_step(*d, inputs, rng);
  for (size_t t = 0; t < 3; ++t) fill_normal(inputs[t], rng);
  fill_gates(*d, d->s, inputs[3], inputs[4], rng);
  if (p.op != "mlstm_bwd") return Status::ok();
  fill_normal(inputs[5], rng);  // dh
  if (mlstm_parallel_flops(*d) > kReferenceMaxFlops) {
    fill_standin_forward(inputs[6], inputs[7], rng);
    return Status::ok();
  }
  HostDevice& host = scratch_host();
  auto h = empty_tensor(host, DType::f64, mlstm_v_shape(*d));
  auto n = empty_tensor(host, DType::f64, mlstm_gate_shape(*d));
  auto m = empty_tensor(host, DType::f64, mlstm_gate_shape(*d));
  for (auto* t : {&h, &n, &m})
    if (!*t) return t->status();
  Problem forward = p;
  forward.op = "mlstm";
  std::vector<Tensor> forward_inputs(inputs.begin(), inputs.begin() + 5);
  std::vector<Tensor> forward_outputs{*h, *n, *m};
  DNNB_TRY(reference::mlstm(forward, forward_inputs, forward_outputs));
  for (auto [src, dst] : {std::pair{&*n, &inputs[6]}, {&*m, &inputs[7]}}) {
    const auto* values = static_cast<const double*>(src->host_data());
    for (int64_t e = 0; e < dst->numel(); ++e) store_element(dst->host_data(), dst->dtype, e, values[e]);
  }
  return Status::ok();
}

double mlstm_parallel_flops(const MlstmDesc& d) {
  const double pairs = static_cast<double>(d.s) * static_cast<double>(d.s + 1) / 2;
  const double rows = static_cast<double>(d.batch * d.heads);
  return rows * (pairs * 2.0 * static_cast<double>(d.dqk + d.dv) + 8.0 * static_cast<double>(d.s));
}

double mlstm_chunkwise_flops(const MlstmDesc& d) {
  const double rows = static_cast<double>(d.batch * d.heads);
  const double l = static_cast<double>(std::min(d.chunk, d.s));
  const double s = static_cast<double>(d.s), dqk = static_cast<double>(d.dqk), dv = static_cast<double>(d.dv);
  const double pairs = s * (l + 1) / 2;  // causal pairs inside the chunks
  // Per token: q C_prev and k^T v into the state (2 DQK DV each), q n_prev and k into n.
  return rows * (pairs * 2.0 * (dqk + dv) + s * (4.0 * dqk * dv + 4.0 * dqk) + 8.0 * s);
}

double mlstm_step_flops(const MlstmDesc& d) {
  const double rows = static_cast<double>(d.batch * d.heads);
  const double dqk = static_cast<double>(d.dqk), dv = static_cast<double>(d.dv);
  // C' = f C + i k v^T (3 per element), h = q C' (2 per element), n' and q n' (5 per DQK).
  return rows * (5.0 * dqk * dv + 5.0 * dqk + 2.0 * dv + 16.0);
}

double mlstm_backward_flops(const MlstmDesc& d) {
  const double pairs = static_cast<double>(d.s) * static_cast<double>(d.s + 1) / 2;
  const double rows = static_cast<double>(d.batch * d.heads);
  // Per causal pair: the scores (2 DQK), dC = dh . v (2 DV), dq, dk (2 DQK each), dv (2 DV).
  return rows * (pairs * 2.0 * static_cast<double>(3 * d.dqk + 2 * d.dv) + 16.0 * static_cast<double>(d.s));
}

OpSpec mlstm_base_spec(const std::string& name, const std::string& torch) {
  OpSpec spec = op_spec("5", name, torch, float_dtypes(), ToleranceClass::attention);
  spec.signature = mlstm_signature;
  spec.fill_inputs = fill_mlstm_inputs;
  spec.flops = [name](const Problem& p) {
    auto d = mlstm_desc(p);
    if (!d) return 0.0;
    if (name == "mlstm_chunkwise") return mlstm_chunkwise_flops(*d);
    if (name == "mlstm_step") return mlstm_step_flops(*d);
    if (name == "mlstm_bwd") return mlstm_backward_flops(*d);
    return mlstm_parallel_flops(*d);
  };
  // Tokens: batch x sequence (a step: one token per sequence), for bench's tokens/s.
  spec.tokens = [](const Problem& p) {
    auto d = mlstm_desc(p);
    return d ? static_cast<double>(d->batch * d->s) : 0.0;
  };
  return spec;
}

std::vector<ProblemText> mlstm_check_problems() {
  // Parameters in sorted order (a problem's text round-trips). No length is a tile multiple.
  return {"1x2x37x64",                        // one short sequence
          "2x3x100x32:dv=64",                 // DV unlike DQK, several batches and heads
          "1x2x129x128:dv=256",               // the bench problems' head dims, past two 64-chunks
          "1x2x257x64:gates=mixed",           // regimes changing inside and across chunks
          "1x2x200x64:gates=neg_i",           // very negative i: n = exp(-m) on the first half
          "1x2x300x64:gates=f_low",           // forget gates near 0: c falls by ~8 per token
          "1x2x300x64:gates=f_high",          // forget gates near 1: memory over the whole sequence
          "1x1x4096x16:gates=f_low",          // |c| up to 3.3e4: the log-space differences
          "1x2x45x64:layout=transposed"};     // q stored [B, NH, DQK, S]
}

std::vector<ProblemText> mlstm_bench_problems() {
  return {ProblemText("32x16x2048x128:dv=256", {DType::bf16}), ProblemText("16x16x4096x128:dv=256", {DType::bf16}),
          ProblemText("8x16x8192x128:dv=256", {DType::bf16}), ProblemText("4x16x16384x128:dv=256", {DType::bf16})};
}

}  // namespace dnnb::ops
