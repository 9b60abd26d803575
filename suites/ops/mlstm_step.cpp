// mlstm_step: the mLSTM's recurrent step for decode (NX-AI mlstm_kernels 2.0.6,
// torch/recurrent/native_step.py, mlstm_recurrent_step__native_fw): one token's q, k
// [B,NH,DQK], v [B,NH,DV] (problem dtype) and gates i, f [B,NH] (f32) with the state c
// [B,NH,DQK,DV], n [B,NH,DQK], m [B,NH] (f32) -> h [B,NH,DV] (problem dtype) and the new state
// c_new, n_new, m_new (f32). The shape is BxNHx1xDQK.
// The state is an input and the new state an output (not updated in place): a step is not
// idempotent (C' = a C + b k v^T), and the suite's state inputs must be (check --bitwise and
// bench run a step more than once: docs/conformance.md, "Steps and state"). A decode loop swaps
// the two buffers. The fixtures' states come from the recurrence over a sequence, whose h the
// generator checks against the parallel form's at every token.
// Tolerance class attention with mLSTM bounds (reference/mlstm.h, docs/numerics.md "mLSTM").
// FLOP model: 5 DQK DV + 5 DQK + 2 DV per head; bytes: c read, c_new written dominate.
#include "reference/mlstm.h"
#include "reference/register.h"
#include "suites/ops/mlstm_common.h"

namespace dnnb {
namespace {

OpSpec make_mlstm_step_spec() {
  OpSpec spec = ops::mlstm_base_spec(
      "mlstm_step", "mlstm_kernels.torch.recurrent.native_step.mlstm_recurrent_step__native_fw(c, n, m, q, k, v, i, f)");
  // Parameters in sorted order (a problem's text round-trips). The state is the recurrence
  // over 16 earlier tokens of the same gate fill (suites/ops/mlstm_common.h).
  spec.check_problems = {"1x2x1x64",
                         "2x3x1x32:dv=64",
                         "3x4x1x128:dv=256",             // the bench head dims
                         "1x2x1x64:gates=neg_i",         // 16 tokens of very negative i before
                         "1x2x1x64:gates=f_low",
                         "1x2x1x64:gates=f_high",
                         "2x2x1x48:dv=80,gates=mixed",   // an f_low block before the step
                         "1x2x1x64:layout=transposed"};  // q stored [B, DQK, NH]
  spec.bench_problems = {ProblemText("256x16x1x128:dv=256", {DType::bf16}),
                         ProblemText("32x16x1x128:dv=256", {DType::bf16})};
  spec.output_bounds = reference::mlstm_step_bounds;
  spec.reference = reference::mlstm_step;
  return spec;
}

DNNB_REGISTER(register_op(make_mlstm_step_spec()));

}  // namespace
}  // namespace dnnb
