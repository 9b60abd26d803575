#include "suites/ops/op_common.h"

#include <algorithm>
#include <cmath>

namespace dnnb::ops {

const std::vector<DType>& float_dtypes() {
  static const std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16};
  return dtypes;
}

const std::vector<DType>& loss_dtypes() {
  static const std::vector<DType> dtypes = {DType::f32, DType::bf16};
  return dtypes;
}

const std::vector<std::string>& common_param_keys() {
  static const std::vector<std::string> keys = {"layout", "fixture", "seed", "tensor"};
  return keys;
}

Status expect_shape(const Problem& problem, size_t rank, const std::string& form) {
  if (problem.shape.size() != rank)
    return Status::bad_input(problem.op + ": shape " + shape_to_string(problem.shape) + " is not " + form);
  for (int64_t d : problem.shape)
    if (d < 1) return Status::bad_input(problem.op + ": shape " + shape_to_string(problem.shape) + " has an empty dim");
  return Status::ok();
}

Status check_problem(const Problem& problem, const std::vector<DType>& dtypes,
                     const std::vector<std::string>& op_keys, size_t min_rank) {
  const std::string& op = problem.op;
  if (std::find(dtypes.begin(), dtypes.end(), problem.dtype) == dtypes.end())
    return Status::bad_input(op + ": dtype " + dtype_name(problem.dtype) + " is not one of this op's dtypes");
  for (const auto& [key, value] : problem.params) {
    const auto& common = common_param_keys();
    // `<operand>.dt` and `<operand>.layout` are checked against the signature by the core
    // (apply_operand_params).
    if (key.find('.') == std::string::npos && std::find(common.begin(), common.end(), key) == common.end() &&
        std::find(op_keys.begin(), op_keys.end(), key) == op_keys.end())
      return Status::bad_input(op + ": unknown parameter '" + key + "'");
  }
  if (problem.shape.size() < min_rank)
    return Status::bad_input(op + ": shape " + shape_to_string(problem.shape) + " needs at least " +
                             std::to_string(min_rank) + " dims");
  for (int64_t d : problem.shape)
    if (d < 1) return Status::bad_input(op + ": shape " + shape_to_string(problem.shape) + " has an empty dim");
  if (problem.has("seed") && !problem.get_int("seed", 0))
    return Status::bad_input(op + ": parameter seed='" + problem.get("seed") + "' is not an integer");
  return Status::ok();
}

Status apply_layout(const Problem& problem, TensorSpec& first_input) {
  const std::string layout = problem.get("layout", "");
  return layout.empty() ? Status::ok() : apply_layout_param(problem.op, "layout", layout, first_input);
}

Result<Shape> shape_param(const Problem& problem, const std::string& key) {
  auto shape = parse_shape(problem.get(key));
  if (!shape) return Status::bad_input(problem.op + ": parameter " + key + ": " + shape.status().message);
  for (int64_t d : *shape)
    if (d < 1)
      return Status::bad_input(problem.op + ": parameter " + key + "=" + problem.get(key) + " has an empty dim");
  return shape;
}

Result<double> number_param(const Problem& problem, const std::string& key, double fallback, double min_value) {
  auto value = problem.get_double(key, fallback);
  if (!value) return Status::bad_input(problem.op + ": " + value.status().message);
  if (!std::isfinite(*value) || *value < min_value)
    return Status::bad_input(problem.op + ": parameter " + key + "=" + problem.get(key) + " is out of range");
  return value;
}

Result<Shape> broadcastable_param(const Problem& problem, const std::string& key, const Shape& target) {
  auto shape = shape_param(problem, key);
  if (!shape) return shape;
  auto joint = broadcast_shapes(target, *shape);
  if (!joint || *joint != target)
    return Status::bad_input(problem.op + ": parameter " + key + "=" + problem.get(key) +
                             " does not broadcast to the input shape " + shape_to_string(target));
  return shape;
}

TensorSpec tensor_spec(std::string name, DType dtype, Shape shape) {
  TensorSpec t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

OpSpec op_spec(const std::string& family, const std::string& name, const std::string& torch,
               const std::vector<DType>& dtypes, ToleranceClass tolerance) {
  OpSpec spec;
  spec.name = name;
  spec.family = family;
  spec.torch = torch;
  spec.dtypes = dtypes;
  spec.tolerance = tolerance;
  return spec;
}

OpSpec family1_spec(const std::string& name, const std::string& torch, const std::vector<DType>& dtypes,
                    ToleranceClass tolerance) {
  // A std::string, not the literal: assigning a one-character literal to a member string
  // trips a false -Wrestrict in GCC 12.
  return op_spec(std::string("1"), name, torch, dtypes, tolerance);
}

std::vector<ProblemText> row_check_problems() {
  return {"64x4096", "333x1000", "1x8192", "4097", "3x5x777",
          "333x1000:layout=transposed", "2x7x33:layout=transposed", "64x4096:layout=padded"};
}

std::vector<ProblemText> row_bench_problems() { return {"16384x8192", "1x8192", "64x8192"}; }

// ---- unary ----

OpSpec unary_spec(const UnaryOp& op) {
  OpSpec spec = family1_spec(op.name, op.torch, float_dtypes(), op.tolerance);
  spec.check_problems = row_check_problems();
  spec.bench_problems = row_bench_problems();
  spec.signature = [](const Problem& p) -> Result<Signature> {
    DNNB_TRY(check_problem(p, float_dtypes(), {}));
    Signature sig;
    sig.inputs = {tensor_spec("x", p.dtype, p.shape)};
    sig.outputs = {tensor_spec("y", p.dtype, p.shape)};
    DNNB_TRY(apply_layout(p, sig.inputs[0]));
    return sig;
  };
  spec.flops = [per_element = op.flops_per_element](const Problem& p) {
    return per_element * static_cast<double>(shape_numel(p.shape));
  };
  spec.reference = op.reference;
  return spec;
}

// ---- binary ----

Result<Signature> binary_signature(const Problem& p) {
  DNNB_TRY(check_problem(p, float_dtypes(), {"b"}));
  Shape b_shape = p.shape;
  if (p.has("b")) {
    auto parsed = shape_param(p, "b");
    if (!parsed) return parsed.status();
    b_shape = *parsed;
  }
  auto y_shape = broadcast_shapes(p.shape, b_shape);
  if (!y_shape)
    return Status::bad_input(p.op + ": parameter b=" + p.get("b") + " does not broadcast with the shape " +
                             shape_to_string(p.shape));
  Signature sig;
  sig.inputs = {tensor_spec("a", p.dtype, p.shape), tensor_spec("b", p.dtype, b_shape)};
  sig.outputs = {tensor_spec("y", p.dtype, *y_shape)};
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

OpSpec binary_spec(const BinaryOp& op) {
  OpSpec spec = family1_spec(op.name, op.torch, float_dtypes(), op.tolerance);
  spec.check_problems = row_check_problems();
  // Row repeat, column repeat, outer-product-like growth of both, a 3-D middle repeat, a
  // transposed a against a repeated row, and a 1-D b against a padded a.
  for (const char* p : {"64x4096:b=1x4096", "64x4096:b=64x1", "64x1:b=1x4096", "2x7x33:b=2x1x33",
                        "333x1000:b=1x1000,layout=transposed", "64x4096:b=4096,layout=padded", "7x33:b=1"})
    spec.check_problems.push_back(p);
  spec.bench_problems = {"16384x8192", "16384x8192:b=1x8192", "16384x8192:b=16384x1", "1x8192", "64x8192"};
  spec.signature = binary_signature;
  // One FLOP per output element.
  spec.flops = [](const Problem& p) {
    auto sig = binary_signature(p);
    return sig ? static_cast<double>(shape_numel(sig->outputs[0].shape)) : 0.0;
  };
  spec.reference = op.reference;
  return spec;
}

// ---- reductions ----

OpSpec reduction_spec(const ReductionOp& op) {
  OpSpec spec = family1_spec(op.name, op.torch, float_dtypes(), op.tolerance);
  spec.check_problems = row_check_problems();
  spec.check_problems.push_back("1");     // one element: a 0-d result of a 1-D input
  spec.check_problems.push_back("4096x7"); // short rows
  spec.bench_problems = row_bench_problems();
  spec.signature = [](const Problem& p) -> Result<Signature> {
    DNNB_TRY(check_problem(p, float_dtypes(), {}));
    Signature sig;
    sig.inputs = {tensor_spec("x", p.dtype, p.shape)};
    sig.outputs = {tensor_spec("y", p.dtype, Shape(p.shape.begin(), p.shape.end() - 1))};
    DNNB_TRY(apply_layout(p, sig.inputs[0]));
    return sig;
  };
  spec.flops = [per_element = op.flops_per_element, per_row = op.flops_per_row](const Problem& p) {
    const double elements = static_cast<double>(shape_numel(p.shape));
    const double rows = elements / static_cast<double>(p.shape.empty() ? 1 : p.shape.back());
    return per_element * elements + per_row * rows;
  };
  spec.reference = op.reference;
  return spec;
}

// ---- cross-entropy ----

Result<Signature> cross_entropy_signature(const Problem& p, bool backward) {
  DNNB_TRY(check_problem(p, loss_dtypes(), {"ignore_index"}));
  if (p.shape.size() != 2)
    return Status::bad_input(p.op + ": shape " + shape_to_string(p.shape) + " must be logits [N, C]");
  auto ignore_index = p.get_int("ignore_index", -100);
  if (!ignore_index) return Status::bad_input(p.op + ": " + ignore_index.status().message);
  Signature sig;
  sig.inputs = {tensor_spec("logits", p.dtype, p.shape), tensor_spec("target", DType::i64, {p.shape[0]})};
  sig.outputs = {backward ? tensor_spec("dlogits", p.dtype, p.shape) : tensor_spec("loss", p.dtype, {})};
  DNNB_TRY(apply_layout(p, sig.inputs[0]));
  return sig;
}

std::vector<ProblemText> cross_entropy_check_problems() {
  return {"512x32000:ignore_index=-100", "64x4096", "333x1000", "1x8192", "7x33:ignore_index=-100",
          "16x1000:ignore_index=3", "333x1000:ignore_index=-100,layout=transposed", "64x4096:layout=padded",
          std::string(kManyRowsProblem) + ":ignore_index=-100",
          // Rows of whole warp chunks (4096 columns: two bf16 chunks, four f32 ones) and enough of
          // them (>= 8 per SM) for the CUDA forward kernel's exact form, which no other problem
          // here reaches (kManyRowsProblem's 2056 columns take its predicated form); more rows than
          // the H100/H200 grid's 2112 warps, so warps take a second row, and more chunks per warp
          // than the bulk-copy variant's 3 ring stages (pipe_tma), so its rings wrap.
          "2500x4096:ignore_index=-100"};
}

std::vector<ProblemText> cross_entropy_bench_problems() {
  return {"16384x8192", "1x8192", "64x8192", "4096x32000:ignore_index=-100"};
}

}  // namespace dnnb::ops
