// What layernorm_bwd and rmsnorm_bwd share (docs/ops-family1.md, "Backward of the norms"): the
// signature x, w, dy [, mean], rstd -> dx, dw [, db], with the statistics the forward saved
// (f32, one per row, shaped [..., 1], as torch's native_layer_norm returns them), and the problems.
#pragma once
#include <string>
#include <vector>

#include "reference/norm_bwd.h"
#include "suites/ops/op_common.h"

namespace dnnb::ops {

// centered: layernorm_bwd (mean input, db output); else rmsnorm_bwd (param form=torch|gemma).
inline Result<Signature> norm_bwd_signature(const Problem& p, bool centered) {
  DNNB_TRY(check_problem(p, float_dtypes(), centered ? std::vector<std::string>{"eps"}
                                                     : std::vector<std::string>{"eps", "form"}));
  // eps only sets the statistics of random cases (the forward's); the backward reads rstd.
  auto eps = number_param(p, "eps", centered ? 1e-5 : 1e-6, 0.0);
  if (!eps) return eps.status();
  const std::string form = p.get("form", "torch");
  if (form != "torch" && form != "gemma")
    return Status::bad_input(p.op + ": parameter form='" + form + "' is not torch or gemma");
  const int64_t n = p.shape.back();
  Shape stats = p.shape;
  stats.back() = 1;
  Signature sig;
  sig.inputs = {tensor_spec("x", p.dtype, p.shape), tensor_spec("w", p.dtype, {n}), tensor_spec("dy", p.dtype, p.shape)};
  if (centered) sig.inputs.push_back(tensor_spec("mean", DType::f32, stats));
  sig.inputs.push_back(tensor_spec("rstd", DType::f32, stats));
  sig.outputs = {tensor_spec("dx", p.dtype, p.shape), tensor_spec("dw", p.dtype, {n})};
  if (centered) sig.outputs.push_back(tensor_spec("db", p.dtype, {n}));
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

// The forward's row problems, the gradient's own strided operand (dy), one row, and the column
// sums' lengths: 4500 rows (kManyRowsProblem), 16384 short rows, and 4096 rows of one column
// (zero variance: layernorm's xhat and dx are 0 there).
inline std::vector<ProblemText> norm_bwd_check_problems() {
  std::vector<ProblemText> problems = row_check_problems();
  for (const char* p : {"333x1000:dy.layout=transposed", "64x4096:eps=0.1,layout=padded", "16384x64", "4096x1"})
    problems.push_back(p);
  problems.push_back(kManyRowsProblem);
  return problems;
}

// Training steps: Llama-3-8B's hidden size over 8192 tokens, GPT-2 small's over 16 x 1024.
inline std::vector<ProblemText> norm_bwd_bench_problems() { return {"8192x4096", "16384x768"}; }

}  // namespace dnnb::ops
