#include "suites/ops/layout_desc.h"

#include <string>

namespace dnnb::ops {
namespace {

Result<int> dim_param(const Problem& problem, int rank) {
  auto dim = problem.get_int("dim", rank - 1);
  if (!dim) return Status::bad_input(problem.op + ": " + dim.status().message);
  if (*dim < 0 || *dim >= rank)
    return Status::bad_input(problem.op + ": parameter dim=" + problem.get("dim") + " is not a dim of " +
                             shape_to_string(problem.shape) + " (0.." + std::to_string(rank - 1) + ")");
  return static_cast<int>(*dim);
}

}  // namespace

Result<std::vector<int>> permute_order(const Problem& problem) {
  const int rank = static_cast<int>(problem.shape.size());
  const std::string perm = problem.get("perm");
  if (rank < 1 || rank > 4) return Status::bad_input("permute: shape " + shape_to_string(problem.shape) + " needs 1 to 4 dims");
  if (static_cast<int>(perm.size()) != rank)
    return Status::bad_input("permute: parameter perm='" + perm + "' must list the " + std::to_string(rank) +
                             " dims of " + shape_to_string(problem.shape) + " as digits, e.g. perm=0213");
  std::vector<int> order;
  std::vector<bool> seen(rank, false);
  for (char c : perm) {
    const int d = c - '0';
    if (d < 0 || d >= rank || seen[d])
      return Status::bad_input("permute: parameter perm=" + perm + " is not a permutation of 0.." + std::to_string(rank - 1));
    seen[d] = true;
    order.push_back(d);
  }
  return order;
}

Result<ConcatDesc> concat_desc(const Problem& problem) {
  ConcatDesc d;
  d.a = problem.shape;
  const int rank = static_cast<int>(d.a.size());
  auto dim = dim_param(problem, rank);
  if (!dim) return dim.status();
  d.dim = *dim;
  d.b = d.a;
  if (problem.has("b")) {
    auto b = parse_shape(problem.get("b"));
    if (!b) return Status::bad_input("concat: parameter b: " + b.status().message);
    d.b = *b;
  }
  bool fits = static_cast<int>(d.b.size()) == rank;
  for (int i = 0; fits && i < rank; ++i) fits = d.b[i] >= 1 && (i == d.dim || d.b[i] == d.a[i]);
  if (!fits)
    return Status::bad_input("concat: b=" + shape_to_string(d.b) + " must equal a's shape " + shape_to_string(d.a) +
                             " except in dim " + std::to_string(d.dim));
  d.y = d.a;
  d.y[d.dim] += d.b[d.dim];
  return d;
}

Result<SliceDesc> slice_desc(const Problem& problem) {
  SliceDesc d;
  const int rank = static_cast<int>(problem.shape.size());
  auto dim = dim_param(problem, rank);
  if (!dim) return dim.status();
  d.dim = *dim;
  if (!problem.has("len")) return Status::bad_input("slice: parameter len=<length> is required");
  auto start = problem.get_int("start", 0);
  auto length = problem.get_int("len", 0);
  if (!start || !length) return Status::bad_input("slice: " + (start ? length : start).status().message);
  d.start = *start;
  d.length = *length;
  if (d.start < 0 || d.length < 1 || d.start + d.length > problem.shape[d.dim])
    return Status::bad_input("slice: start=" + std::to_string(d.start) + ", len=" + std::to_string(d.length) +
                             " does not fit dim " + std::to_string(d.dim) + " of " + shape_to_string(problem.shape));
  d.y = problem.shape;
  d.y[d.dim] = d.length;
  return d;
}

Result<EmbeddingDesc> embedding_desc(const Problem& problem) {
  if (problem.shape.size() != 3)
    return Status::bad_input("embedding: shape " + shape_to_string(problem.shape) + " is not TxVxD (ids, vocab, dim)");
  return EmbeddingDesc{problem.shape[0], problem.shape[1], problem.shape[2]};
}

Result<EmbeddingDesc> embedding_bwd_operands(const OpCall& call, const std::string& who) {
  if (call.inputs.size() != 2 || call.outputs.size() != 1)
    return Status::bad_input(who + ": expects inputs (ids, dy) and one output (dW)");
  const Problem& p = call.problem;
  if (p.shape.size() != 3) return Status::bad_input("embedding_bwd: shape " + shape_to_string(p.shape) + " is not TxVxD");
  const EmbeddingDesc d{p.shape[0], p.shape[1], p.shape[2]};
  const Tensor& ids = call.inputs[0];
  const Tensor& dy = call.inputs[1];
  const Tensor& dw = call.outputs[0];
  if (ids.dtype != DType::i64 && ids.dtype != DType::i32)
    return Status::unsupported(who + ": ids of " + dtype_name(ids.dtype) + " (i64 or i32 only)");
  if (ids.shape != Shape{d.tokens} || dy.shape != Shape{d.tokens, d.dim} || dw.shape != Shape{d.vocab, d.dim} ||
      dy.dtype != dw.dtype)
    return Status::bad_input(who + ": ids " + ids.describe() + ", dy " + dy.describe() + ", dW " + dw.describe() +
                             " do not match " + p.to_string());
  return d;
}

Result<RepeatKvDesc> repeat_kv_desc(const Problem& problem) {
  if (problem.shape.size() != 4)
    return Status::bad_input("repeat_kv: shape " + shape_to_string(problem.shape) + " is not BxHxSxD");
  if (!problem.has("n_rep")) return Status::bad_input("repeat_kv: parameter n_rep=<R> is required");
  auto n_rep = problem.get_int("n_rep", 1);
  if (!n_rep) return Status::bad_input("repeat_kv: " + n_rep.status().message);
  if (*n_rep < 1) return Status::bad_input("repeat_kv: parameter n_rep=" + problem.get("n_rep") + " is below 1");
  RepeatKvDesc d;
  d.n_rep = *n_rep;
  d.y = problem.shape;
  d.y[1] *= d.n_rep;
  return d;
}

}  // namespace dnnb::ops
