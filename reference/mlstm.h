// The float64 references of the mLSTM (docs/ops-family5.md): the parallel stabilised form
// (mlstm), its chunkwise form (mlstm_chunkwise), the recurrent step (mlstm_step) and the
// backward of the parallel form (mlstm_bwd), with the error bounds of their outputs
// (OpSpec::output_bounds, docs/numerics.md, "mLSTM"). What the four share is declared here too.
#pragma once
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"
#include "core/tensor.h"
#include "suites/ops/mlstm_desc.h"

namespace dnnb::reference {

// q, k, v, i, f -> h, n, m (mlstm_kernels torch/parallel/native/fw.py).
Status mlstm(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
Result<std::vector<OutputBound>> mlstm_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

// q, k, v, i, f -> h, c_last, n_last, m_last: the chunkwise recurrence over chunks of `chunk`
// tokens from the zero state (m0 = 0), as mlstm_kernels torch/chunkwise/native/fw.py with
// return_last_states=True.
Status mlstm_chunkwise(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
Result<std::vector<OutputBound>> mlstm_chunkwise_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

// q, k, v, i, f, c, n, m -> h, c_new, n_new, m_new (mlstm_kernels torch/recurrent/native_step.py).
Status mlstm_step(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
Result<std::vector<OutputBound>> mlstm_step_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

// q, k, v, i, f, dh, n, m -> dq, dk, dv, di, df: torch autograd of the parallel form.
Status mlstm_bwd(const Problem& problem, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
Result<std::vector<OutputBound>> mlstm_bwd_bounds(const Problem& problem, const std::vector<Tensor>& inputs);

// The state (c [rows, DQK, DV], n [rows, DQK], m [rows], stored as f32 into the three tensors)
// after `length` recurrent steps from the zero state over k [rows, length, DQK], v [rows, length,
// DV] and gates i, f [rows, length], all float64 (mlstm_step's random inputs).
Status mlstm_recurrent_state(const ops::MlstmDesc& d, const std::vector<double>& k, const std::vector<double>& v,
                             const std::vector<double>& i, const std::vector<double>& f, int64_t length, Tensor& c,
                             Tensor& n, Tensor& m);

// ---- shared by the reference files ----

// A sequence op's operands in float64, row-major, with the descriptor.
struct MlstmOperands {
  ops::MlstmDesc d;
  DType dtype = DType::f32;
  std::vector<double> q, k, v, i, f;  // [B,NH,S,DQK], [B,NH,S,DQK], [B,NH,S,DV], [B,NH,S], [B,NH,S]
  std::vector<double> log_f;          // logsigmoid(f), [B,NH,S]
  std::vector<double> extra;          // inputs after f, concatenated (mlstm_bwd: dh, n, m)
};
// Reads q, k, v, i, f and then `extra_names` (appended in order to `extra`).
Result<MlstmOperands> read_mlstm_operands(const Problem& problem, const std::vector<Tensor>& inputs,
                                          const std::vector<const char*>& extra_names);

double log_sigmoid(double x);

// Row t of the parallel form of head r (index b * NH + h): for s <= t the log gate logD[t, s]
// (summed over the span (s, t] only, so no large cumulative sums cancel), D = exp(logD - m),
// the score scale q_t . k_s, its magnitude scale sum |q_t k_s|, and C~ = score D; then the
// row's m, the sum of C~, n and the divisor n + eps.
struct MlstmRow {
  std::vector<double> log_d, dgate, score, score_abs, ctilde;
  double m = 0, rowsum = 0, n = 0, divisor = 1;
};
void mlstm_row(const MlstmOperands& x, int64_t r, int64_t t, MlstmRow& row);

// The absolute error of the exponent logD[t, s] - m[t] when formed from f32 values (c the
// cumulative sum of logsigmoid(f) of head r, in float64): docs/numerics.md, "mLSTM".
double mlstm_log_gate_error(const std::vector<double>& c, const std::vector<double>& i, int64_t length, int64_t t,
                            int64_t s, double m);
// c[s] = sum_{r <= s} logsigmoid(f[r]) of head r.
std::vector<double> mlstm_cumulative_gates(const MlstmOperands& x, int64_t r);
// The bounds of h, n and m of the parallel form on x (docs/numerics.md, "mLSTM"). With
// state_chunk = L > 0, a token s of an earlier chunk than t's (chunks of L tokens) reaches h[t]
// through a state rounded to the dtype for the product with q (the chunkwise form's tensor-core
// products), which adds eps x D scale sum |q_t k_s| per term.
std::vector<OutputBound> mlstm_sequence_bounds(const MlstmOperands& x, int64_t state_chunk);
// 2^-23 (f32), 2^-10 (f16), 2^-7 (bf16): one rounding to the dtype, relative.
double mlstm_dtype_eps(DType dtype);

}  // namespace dnnb::reference
