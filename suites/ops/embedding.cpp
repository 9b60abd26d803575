// embedding: y[t] = table[ids[t]]; torch: F.embedding(ids, table). Shape "TxVxD": T ids
// (i64, or i32 with ids.dt=i32) into a table [V, D] of the problem dtype; y [T, D].
// An id outside [0, V) is bad input on every backend (torch raises IndexError): kernels never
// read outside the table.
// A pure copy: tolerance class selection. FLOP model: none; bytes: ids, the T rows read, y.
#include "reference/layout.h"
#include "reference/register.h"
#include "suites/ops/layout_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> embedding_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {}, 3));
  auto d = ops::embedding_desc(p);
  if (!d) return d.status();
  Signature sig;
  TensorSpec ids = ops::tensor_spec("ids", DType::i64, {d->tokens});
  ids.dtype_choices = {DType::i32};
  sig.inputs = {ids, ops::tensor_spec("table", p.dtype, {d->vocab, d->dim})};
  sig.outputs = {ops::tensor_spec("y", p.dtype, {d->tokens, d->dim})};
  return sig;
}

// ids uniform over the table, with its first and last rows always used; the table normal.
Status fill_embedding_inputs(const Problem& p, std::vector<Tensor>& inputs, Rng& rng) {
  auto d = ops::embedding_desc(p);
  if (!d) return d.status();
  if (inputs.size() != 2) return Status::bad_input("embedding: expected inputs ids and table");
  void* ids = inputs[0].host_data();
  for (int64_t t = 0; t < d->tokens; ++t) {
    const int64_t id = t == 0 ? d->vocab - 1 : t == 1 ? 0 : rng.integer(0, d->vocab);
    store_element(ids, inputs[0].dtype, t, static_cast<double>(id));
  }
  void* table = inputs[1].host_data();
  for (int64_t i = 0; i < inputs[1].numel(); ++i) store_element(table, inputs[1].dtype, i, rng.normal());
  return Status::ok();
}

OpSpec make_embedding_spec() {
  OpSpec spec = ops::op_spec("2", "embedding", "F.embedding(ids, table)", ops::float_dtypes(), ToleranceClass::selection);
  spec.check_problems = {"8x50x16", "5x1000x64", "6x40x24:ids.dt=i32", "1x1x1", "512x32000x64", "100x7x4096",
                         "333x1000x33:table.layout=padded"};
  // 16384 tokens of a Llama-3-8B-sized embedding (dim 4096): 256 MiB of f32 rows read and written.
  spec.bench_problems = {"16384x32000x4096", "1x32000x4096"};
  spec.deferred_input_checks = true;  // CUDA and OpenCL report ids outside the table at the next synchronize()
  spec.signature = embedding_signature;
  spec.fill_inputs = fill_embedding_inputs;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.bytes = [](const Problem& p) {
    auto d = ops::embedding_desc(p);
    if (!d) return 0.0;
    const double ids = static_cast<double>(d->tokens * dtype_size(DType::i64));
    return ids + 2.0 * static_cast<double>(d->tokens * d->dim * dtype_size(p.dtype));
  };
  spec.reference = reference::embedding;
  return spec;
}

DNNB_REGISTER(register_op(make_embedding_spec()));

}  // namespace
}  // namespace dnnb
