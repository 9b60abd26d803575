// mlstm_bwd: the gradients dq, dk, dv, di, df of the parallel form's h for an upstream gradient
// dh, as torch autograd computes them through NX-AI mlstm_kernels 2.0.6
// torch/parallel/native/fw.py (mlstm_parallel_fw) in float64; n and m get no gradient.
// Inputs q, k [B,NH,S,DQK], v [B,NH,S,DV], dh [B,NH,S,DV] (problem dtype), i, f [B,NH,S] and
// the forward's n, m [B,NH,S] (f32, as mlstm stores them: a kernel recomputes D and C~ from
// them); outputs dq, dk, dv (problem dtype), di, df [B,NH,S] (f32).
// The gradient includes the normaliser's path (dn = -sum_s dC C~ / (n + eps)^2 into the row sum
// or exp(-m)), which the package's own backward (torch/parallel/native/bw.py) leaves out; the m
// path (h depends on m only through eps) may be left out (docs/ops-family5.md).
// Tolerance class attention with mLSTM bounds (reference/mlstm.h, docs/numerics.md "mLSTM").
// FLOP model: 2 (3 DQK + 2 DV) per causal pair per head (as sdpa_bwd's).
#include "reference/mlstm.h"
#include "reference/register.h"
#include "suites/ops/mlstm_common.h"

namespace dnnb {
namespace {

OpSpec make_mlstm_bwd_spec() {
  OpSpec spec = ops::mlstm_base_spec(
      "mlstm_bwd", "torch.autograd.grad(mlstm_kernels.torch.parallel.native.fw.mlstm_parallel_fw(q, k, v, i, f)[0], "
                   "(q, k, v, i, f), dh)");
  spec.check_problems = ops::mlstm_check_problems();
  spec.bench_problems = ops::mlstm_bench_problems();
  spec.output_bounds = reference::mlstm_bwd_bounds;
  spec.reference = reference::mlstm_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_mlstm_bwd_spec()));

}  // namespace
}  // namespace dnnb
