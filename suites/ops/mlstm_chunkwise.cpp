// mlstm_chunkwise: the mLSTM's chunkwise form (NX-AI mlstm_kernels 2.0.6,
// torch/chunkwise/native/fw.py, mlstm_chunkwise_fw(..., chunk_size=L, return_last_states=True)):
// the states (C, n, m) carried across chunks of L = chunk= tokens from the zero state, the
// chunk's own causal pairs in parallel. Inputs as mlstm's (q, k [B,NH,S,DQK], v [B,NH,S,DV] in
// the problem dtype, i, f [B,NH,S] f32); outputs h [B,NH,S,DV] (problem dtype; the parallel
// form's h up to eps), c_last [B,NH,DQK,DV], n_last [B,NH,DQK], m_last [B,NH] (f32, the states
// after the last token). S need not be a multiple of L (the last chunk is shorter); no output
// depends on L. Operands: suites/ops/mlstm_desc.h; docs/ops-family5.md.
// Tolerance class attention with mLSTM bounds (reference/mlstm.h, docs/numerics.md "mLSTM"):
// h as mlstm's plus the state's rounding to the dtype for tokens of earlier chunks; the last
// states from their tokens' magnitudes.
// FLOP model: 2 (DQK + DV) per causal pair inside the chunks plus 4 DQK DV + 4 DQK per token for
// the state products (suites/ops/mlstm_common.cpp).
#include "reference/mlstm.h"
#include "reference/register.h"
#include "suites/ops/mlstm_common.h"

namespace dnnb {
namespace {

OpSpec make_mlstm_chunkwise_spec() {
  OpSpec spec = ops::mlstm_base_spec(
      "mlstm_chunkwise",
      "mlstm_kernels.torch.chunkwise.native.fw.mlstm_chunkwise_fw(q, k, v, i, f, chunk_size=L, return_last_states=True)");
  // Parameters in sorted order (a problem's text round-trips). Lengths and chunks share no tile.
  spec.check_problems = {"1x2x37x64:chunk=16",                 // two chunks and a 5-token tail
                         "2x3x100x32:dv=64",                   // one partial chunk of the default 64
                         "1x2x129x128:dv=256",                 // the bench head dims, 2 chunks + 1
                         "1x2x257x64:chunk=32,gates=mixed",    // regimes changing across chunks
                         "1x2x200x64:chunk=48,gates=neg_i",
                         "1x2x300x64:gates=f_low",
                         "1x2x300x64:chunk=128,gates=f_high",
                         "1x1x4096x16:gates=f_low",            // |c| up to 3.3e4
                         "1x2x70x64:chunk=7",                  // a chunk below any tile
                         "1x2x45x64:chunk=16,layout=transposed"};
  spec.bench_problems = ops::mlstm_bench_problems();
  spec.output_bounds = reference::mlstm_chunkwise_bounds;
  spec.reference = reference::mlstm_chunkwise;
  return spec;
}

DNNB_REGISTER(register_op(make_mlstm_chunkwise_spec()));

}  // namespace
}  // namespace dnnb
