// The typed descriptor of the mLSTM ops (family 5: mlstm, mlstm_chunkwise, mlstm_step,
// mlstm_bwd; docs/ops-family5.md): every kernel, the specs and the reference parse a problem
// through mlstm_desc, so defaults and checks live here.
//
// Shape "BxNHxSxDQK": batch, heads, sequence length, head dim of q and k. Params: dv=<v head
// dim> (default DQK), chunk=<L> (the chunk length of the chunkwise form, default 64: its kernels
// tile with it, since the tolerance counts a state rounded to the dtype for the tokens of earlier
// chunks of this length; a kernel may report lengths it does not handle unsupported),
// gates=normal|neg_i|f_low|f_high|mixed (how random cases and fixtures draw the gate
// pre-activations i and f, to stress the stabiliser; kernels ignore it: docs/ops-family5.md).
//
// Operands (q, k, v in the problem dtype; gates, normaliser, max state and states in f32,
// because the stabiliser works in log space over a cumulative sum of length S):
//   mlstm            in  q, k [B,NH,S,DQK], v [B,NH,S,DV], i, f [B,NH,S] (f32 pre-activations)
//                    out h [B,NH,S,DV], n, m [B,NH,S] (f32)
//   mlstm_chunkwise  in  as mlstm
//                    out h [B,NH,S,DV], c_last [B,NH,DQK,DV], n_last [B,NH,DQK], m_last [B,NH] (f32)
//   mlstm_step       in  q, k [B,NH,DQK], v [B,NH,DV], i, f [B,NH], c [B,NH,DQK,DV], n [B,NH,DQK], m [B,NH]
//                    out h [B,NH,DV], c_new, n_new, m_new (shapes of c, n, m)
//   mlstm_bwd        in  q, k, v, i, f, dh [B,NH,S,DV], n, m (the forward's, f32)
//                    out dq, dk [B,NH,S,DQK], dv [B,NH,S,DV] (problem dtype), di, df [B,NH,S] (f32)
// mlstm_step's shape is BxNHx1xDQK; its state is an input and the new state an output (not
// updated in place: a step is not idempotent, and check/bench may run a step twice).
// mlstm_bwd is torch autograd of the parallel form's h, including the normaliser's path
// (dn = -sum_s dC C~ / (n + eps)^2 into |rowsum| or exp(-m)), which mlstm_kernels'
// parallel/native/bw.py leaves out; m may be held constant (its path is eps-level).
// The parallel form (NX-AI mlstm_kernels, torch/parallel/native/fw.py):
//   logF = logsigmoid(f), c = cumsum(logF), logD[t,s] = c[t] - c[s] + i[s] (s <= t, else -inf),
//   m[t] = max_s logD[t,s], D = exp(logD - m), C = (q k^T / sqrt(DQK)) * D,
//   n[t] = max(|sum_s C[t,s]|, exp(-m[t])), h = (C / (n + eps)) v, eps = 1e-6.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/registry.h"
#include "core/status.h"

namespace dnnb::ops {

struct MlstmDesc {
  int64_t batch = 1, heads = 1, s = 1;  // s: sequence length (mlstm_step: 1)
  int64_t dqk = 1, dv = 1;              // head dims of q/k and of v
  int64_t chunk = 64;                   // chunkwise form's chunk length
  double eps = 1e-6;                    // the normaliser's epsilon (fixed by the package)
  std::string gates = "normal";         // the gate fill of random cases (no effect on the math)
  double scale() const;                 // 1 / sqrt(dqk)
};

// Parses and validates the shape and params (every dimension positive).
Result<MlstmDesc> mlstm_desc(const Problem& problem);

// The parameter keys the mLSTM ops take (for ops::check_problem).
const std::vector<std::string>& mlstm_param_keys();

// The shapes of the operands.
Shape mlstm_qk_shape(const MlstmDesc& d);    // [B, NH, S, DQK]
Shape mlstm_v_shape(const MlstmDesc& d);     // [B, NH, S, DV]  (v, h, dh, dv)
Shape mlstm_gate_shape(const MlstmDesc& d);  // [B, NH, S]      (i, f, n, m, di, df)
Shape mlstm_c_state_shape(const MlstmDesc& d);  // [B, NH, DQK, DV]
Shape mlstm_n_state_shape(const MlstmDesc& d);  // [B, NH, DQK]
Shape mlstm_m_state_shape(const MlstmDesc& d);  // [B, NH]

}  // namespace dnnb::ops
