// mlstm: the mLSTM's parallel stabilised form (xLSTM; NX-AI mlstm_kernels 2.0.6,
// torch/parallel/native/fw.py, mlstm_parallel_fw): inputs q, k [B,NH,S,DQK], v [B,NH,S,DV] in
// the problem dtype, gate pre-activations i, f [B,NH,S] in f32; outputs h [B,NH,S,DV] (problem
// dtype) and the normaliser n and row max m [B,NH,S] (f32). Math and operands:
// suites/ops/mlstm_desc.h; docs/ops-family5.md.
// Tolerance class attention with mLSTM bounds (reference/mlstm.h, docs/numerics.md "mLSTM"):
// random cases against bounds from magnitude sums of the float64 intermediates; a fixture
// passes at 2x torch's own same-dtype error plus one rounding of the products' operands.
// FLOP model: 2 (DQK + DV) per causal (t, s) pair per head plus 8 per token for the gates
// (FlashAttention's count; the gate matrix's exp and products are not counted).
#include "reference/mlstm.h"
#include "reference/register.h"
#include "suites/ops/mlstm_common.h"

namespace dnnb {
namespace {

OpSpec make_mlstm_spec() {
  OpSpec spec = ops::mlstm_base_spec("mlstm", "mlstm_kernels.torch.parallel.native.fw.mlstm_parallel_fw(q, k, v, i, f, eps=1e-6)");
  spec.check_problems = ops::mlstm_check_problems();
  spec.bench_problems = ops::mlstm_bench_problems();
  spec.output_bounds = reference::mlstm_bounds;
  spec.reference = reference::mlstm;
  return spec;
}

DNNB_REGISTER(register_op(make_mlstm_spec()));

}  // namespace
}  // namespace dnnb
