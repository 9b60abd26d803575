// embedding_bwd: dW[v] = sum of dy[t] over the tokens t with ids[t] = v (zero for rows no token
// takes), the gradient of F.embedding(ids, W) for the incoming gradient dy; repeated ids sum.
// Shape "TxVxD" as embedding's: T ids (i64, or i32 with ids.dt=i32) into a table of V rows of
// D values; dy [T, D] and dW [V, D] of the problem's dtype (torch's W.grad has W's dtype). Every
// kernel accumulates in f32 and rounds each element of dW once. torch:
// torch.autograd.grad(F.embedding(ids, W), W, dy). The project's embedding has no padding_idx,
// so neither has its backward. An id outside [0, V) is bad input on every backend, as for the
// forward (torch raises IndexError): no kernel adds through it.
// Tolerance class reduction: each element sums the dy values of its row's tokens (all T of
// them when every id is one row). FLOP model: T D additions; bytes: ids, dy, dW written once.
#include "reference/embedding_bwd.h"
#include "reference/register.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> embedding_bwd_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::loss_dtypes(), {}, 3));
  DNNB_TRY(ops::expect_shape(p, 3, "TxVxD (ids, vocab, dim)"));
  const int64_t tokens = p.shape[0], vocab = p.shape[1], dim = p.shape[2];
  Signature sig;
  TensorSpec ids = ops::tensor_spec("ids", DType::i64, {tokens});
  ids.dtype_choices = {DType::i32};
  sig.inputs = {ids, ops::tensor_spec("dy", p.dtype, {tokens, dim})};
  sig.outputs = {ops::tensor_spec("dW", p.dtype, {vocab, dim})};
  return sig;
}

// ids uniform over the table with its first and last rows always used, so most problems
// repeat ids and leave rows untouched; dy normal.
Status fill_embedding_bwd_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
  if (inputs.size() != 2) return Status::bad_input(p.op + ": expected inputs ids and dy");
  const int64_t tokens = p.shape[0], vocab = p.shape[1];
  void* ids = inputs[0].host_data();
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t id = t == 0 ? vocab - 1 : t == 1 ? 0 : rng.integer(0, vocab);
    store_element(ids, inputs[0].dtype, t, static_cast<double>(id));
  }
  void* dy = inputs[1].host_data();
  for (int64_t i = 0; i < inputs[1].numel(); ++i) store_element(dy, inputs[1].dtype, i, rng.normal());
  return Status::ok();
}

OpSpec make_embedding_bwd_spec() {
  OpSpec spec = ops::op_spec("2", "embedding_bwd", "torch.autograd.grad(F.embedding(ids, W), W, dy)",
                             ops::loss_dtypes(), ToleranceClass::reduction);
  spec.check_problems = {
      "8x50x16", "5x1000x64", "6x40x24:ids.dt=i32", "1x1x1", "512x32000x64", "100x7x4096",
      "333x1000x33:dy.layout=padded", "64x100x48:dy.layout=transposed",
      // Many tokens on few rows: 4096 tokens over 3 rows (about 1365 a row), and every token
      // on the one row of a 1-row table.
      "4096x3x130", "2000x1x33",
      // Rows of 1024 values (the vector paths) with more tokens than rows.
      "3000x500x1024:ids.dt=i32"};
  // 16384 tokens (the size) and 4096 of a Llama-sized vocabulary at hidden size 4096:
  // dW is 32000 x 4096, which every kernel writes whole.
  spec.bench_problems = {"16384x32000x4096", "4096x32000x4096"};
  spec.deferred_input_checks = true;  // CUDA and OpenCL report ids outside the table at the next synchronize()
  spec.signature = embedding_bwd_signature;
  spec.fill_inputs = fill_embedding_bwd_inputs;
  spec.flops = [](const Problem& p) {
    return p.shape.size() == 3 ? static_cast<double>(p.shape[0] * p.shape[2]) : 0.0;
  };
  spec.reference = reference::embedding_bwd;
  return spec;
}

DNNB_REGISTER(register_op(make_embedding_bwd_spec()));

}  // namespace
}  // namespace dnnb
