// What the family-1 op specs share: parameter validation, the `layout` parameter, and the
// spec builders for the three op shapes that repeat (unary elementwise, binary with
// broadcasting, last-dim reduction). Each op still has its own file in suites/ops/ with its
// torch call, tolerance class and FLOP model.
#pragma once
#include <string>
#include <vector>

#include "core/registry.h"

namespace dnnb::ops {

const std::vector<DType>& float_dtypes();  // f32 f16 bf16
const std::vector<DType>& loss_dtypes();   // f32 bf16 (cross-entropy)

// Parameters every op accepts (docs/ops-family1.md, "Common parameters").
const std::vector<std::string>& common_param_keys();  // layout, fixture, seed, tensor (a --weights case's tensor)

// Checks every signature makes first: the dtype is one of `dtypes`, every parameter key is
// common or in `op_keys` (a typo must not silently change nothing), the shape has at least
// `min_rank` dims and no zero dim. Errors are bad_input naming the op and the culprit.
Status check_problem(const Problem& problem, const std::vector<DType>& dtypes,
                     const std::vector<std::string>& op_keys, size_t min_rank = 1);

// A typed descriptor's shape check: exactly `rank` dims, none empty; bad_input naming the op and
// `form` ("BxHxSxD (batch, heads, length, head dim)") otherwise.
Status expect_shape(const Problem& problem, size_t rank, const std::string& form);

// The `layout` parameter, applied to the first input's spec: transposed stores the last two
// dims swapped (needs >= 2 dims), padded pads each row by 3 elements.
Status apply_layout(const Problem& problem, TensorSpec& first_input);

// A shape-valued parameter ("b=1x4096"); bad_input naming the key.
Result<Shape> shape_param(const Problem& problem, const std::string& key);
// A finite number parameter at least `min_value`; bad_input naming the key.
Result<double> number_param(const Problem& problem, const std::string& key, double fallback,
                            double min_value = -1e300);
// A shape parameter that must broadcast to `target` without growing it (masks, lerp's w).
Result<Shape> broadcastable_param(const Problem& problem, const std::string& key, const Shape& target);

TensorSpec tensor_spec(std::string name, DType dtype, Shape shape);

// A spec of catalogue family `family` with its identity filled in; the op file adds problems
// and functions.
OpSpec op_spec(const std::string& family, const std::string& name, const std::string& torch,
               const std::vector<DType>& dtypes, ToleranceClass tolerance);
// A family-1 spec with its identity filled in; the op file adds problems and functions.
OpSpec family1_spec(const std::string& name, const std::string& torch, const std::vector<DType>& dtypes,
                    ToleranceClass tolerance);

// The shapes most ops are checked and benchmarked at.
std::vector<ProblemText> row_check_problems();   // 64x4096 333x1000 1x8192 + layouts, 3-D, odd
// "4500x2056": enough rows that GPU row kernels with persistent blocks or warps (132 SMs x 2-3
// blocks, or x 16 warps) each loop over several rows, crossing row boundaries, which the
// problems above (<= 512 rows) never reach; 2056 columns are a whole number of 16-byte vectors
// in every float dtype (the pipelined paths' condition) and not a power of two.
inline constexpr const char* kManyRowsProblem = "4500x2056";
std::vector<ProblemText> row_bench_problems();   // 16384x8192 1x8192 64x8192

// Elementwise x -> y; `flops_per_element` is documented in the op's file.
struct UnaryOp {
  std::string name;
  std::string torch;
  ToleranceClass tolerance;
  double flops_per_element;
  Status (*reference)(const Problem&, const std::vector<Tensor>&, std::vector<Tensor>&);
};
OpSpec unary_spec(const UnaryOp& op);

// a, b -> y = broadcast(a, b); one FLOP per output element.
struct BinaryOp {
  std::string name;
  std::string torch;
  ToleranceClass tolerance;
  Status (*reference)(const Problem&, const std::vector<Tensor>&, std::vector<Tensor>&);
};
Result<Signature> binary_signature(const Problem& problem);
OpSpec binary_spec(const BinaryOp& op);

// x [..., N] -> y [...]; FLOPs = per_element * numel(x) + per_row * rows.
struct ReductionOp {
  std::string name;
  std::string torch;
  ToleranceClass tolerance;
  double flops_per_element;
  double flops_per_row;
  Status (*reference)(const Problem&, const std::vector<Tensor>&, std::vector<Tensor>&);
};
OpSpec reduction_spec(const ReductionOp& op);

// cross_entropy and its backward share inputs: logits [N, C] (problem dtype), target [N]
// (i64), param ignore_index=I (integer). Output `loss` [] or `dlogits` [N, C].
Result<Signature> cross_entropy_signature(const Problem& problem, bool backward);
std::vector<ProblemText> cross_entropy_check_problems();
std::vector<ProblemText> cross_entropy_bench_problems();

}  // namespace dnnb::ops
