// dequantize_blocks: x in a block format (the problem's dtype: q8_0, q4_0, mxfp8, mxfp8_e5m2,
// mxfp4) -> y, y.dt=f32 (default), f16 or bf16 (docs/ops-family4.md, "dequantize_blocks").
// Each value is decoded exactly (scale x element, core/dtype.cpp's load_element, as
// gguf.quants' dequantize and the OCP MX spec define it) and rounded once to y's dtype.
// x's rows are whole contiguous blocks, possibly padded (`layout=padded`: one block between rows).
// Tolerance class selection: one right answer per element.
// FLOP model: none. Bytes: x read once, y written once.
#include "reference/quantize_blocks.h"
#include "reference/register.h"
#include "suites/ops/blocks_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> dequantize_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::block_formats(), {}));
  DNNB_TRY(ops::check_block_shape(p));
  auto target = ops::dequantize_target(p);
  if (!target) return target.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  TensorSpec y = ops::tensor_spec("y", DType::f32, p.shape);
  y.dtype_choices = {DType::f16, DType::bf16};
  sig.outputs = {y};
  // layout=padded: x's rows one block apart more than their length (transposed is refused: a
  // block format's rows are whole contiguous blocks).
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

std::vector<ProblemText> dequantize_check_problems() {
  std::vector<ProblemText> out;
  for (const char* to : {"", "y.dt=f16", "y.dt=bf16"})
    // 7x96: three blocks a row; 600x512 (9,600 blocks: every scale and element code many
    // times); 1-D and 3-D.
    for (const char* shape : {"7x96", "600x512", "8192", "2x3x256", "37x160:layout=padded"})
      out.push_back(std::string(shape) + (*to ? (std::string(shape).find(':') == std::string::npos ? ":" : ",") : "") + to);
  return out;
}

OpSpec make_dequantize_blocks_spec() {
  OpSpec spec = ops::op_spec("4", "dequantize_blocks", "gguf.quants.dequantize(x, type) / OCP MX v1.0 decode",
                             ops::block_formats(), ToleranceClass::selection);
  spec.check_problems = dequantize_check_problems();
  // The bench sources of quantize_blocks, decoded back (256 MiB of f32 or bf16 written).
  spec.bench_problems = {{"8192x8192", {DType::q8_0, DType::q4_0}},
                         {"16384x8192:y.dt=bf16", {DType::mxfp8, DType::mxfp4}}};
  spec.signature = dequantize_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.fill_inputs = ops::fill_dequantize_inputs;
  spec.reference = reference::dequantize_blocks;
  return spec;
}

DNNB_REGISTER(register_op(make_dequantize_blocks_spec()));

}  // namespace
}  // namespace dnnb
