// What the mLSTM op specs share (docs/ops-family5.md): their signatures, random inputs,
// FLOP models and problems. The operand contract is suites/ops/mlstm_desc.h.
#pragma once
#include <vector>

#include "core/registry.h"
#include "core/rng.h"
#include "suites/ops/mlstm_desc.h"

namespace dnnb::ops {

// The signature of mlstm, mlstm_chunkwise, mlstm_step or mlstm_bwd (by problem.op), with the
// problem checked: dtype f32/f16/bf16, the keys of mlstm_param_keys, S = 1 for mlstm_step.
// `layout=` applies to q.
Result<Signature> mlstm_signature(const Problem& problem);

// The gate pre-activations of position s of a sequence of length S under `gates`
// (docs/ops-family5.md, "Gates"); rng draws the normal(0, 1) part.
void mlstm_draw_gates(const std::string& gates, int64_t s, int64_t length, Rng& rng, double& i, double& f);

// Random inputs: q, k, v, dh normal(0, 1) in the dtype, i and f by the gates fill; mlstm_step's
// state is the float64 recurrence over kStepPrefix earlier tokens from the zero state, rounded to
// f32; mlstm_bwd's n and m are the float64 forward's, rounded to f32 (above the reference's FLOP
// limit: stand-ins of the same scale).
inline constexpr int64_t kStepPrefix = 16;
Status fill_mlstm_inputs(const Problem& problem, std::vector<Tensor>& inputs, Rng& rng);

// FLOP models (docs/ops-family5.md, "FLOP and byte model").
double mlstm_parallel_flops(const MlstmDesc& d);   // 2 (DQK + DV) per causal pair + the gates
double mlstm_chunkwise_flops(const MlstmDesc& d);  // intra-chunk pairs + the state products
double mlstm_step_flops(const MlstmDesc& d);
double mlstm_backward_flops(const MlstmDesc& d);

// A spec of op `name` (mlstm, mlstm_chunkwise, mlstm_step, mlstm_bwd) with everything but the
// reference, the bounds and the problems filled in.
OpSpec mlstm_base_spec(const std::string& name, const std::string& torch);

// Check problems of the sequence ops (mlstm, mlstm_chunkwise, mlstm_bwd) and the bench
// problems of issue 30 (bf16, 65,536 tokens, 16 heads, DQK 128, DV 256).
std::vector<ProblemText> mlstm_check_problems();
std::vector<ProblemText> mlstm_bench_problems();

}  // namespace dnnb::ops
