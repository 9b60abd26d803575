// quantize_blocks: x (f32, f16 or bf16) -> y in a block format, y.dt=q8_0 (default), q4_0,
// mxfp8, mxfp8_e5m2 or mxfp4 (docs/ops-family4.md, "quantize_blocks"). Each row's 32-value
// blocks are quantised as core/dtype.cpp's quantize_row does: q8_0 and q4_0 bit-exact with
// ggml's quantize_row_*_ref (gguf.quants, the fixtures' reference), the MX formats by the OCP
// MX v1.0 rule. x may be transposed or padded (`layout=`); y is contiguous.
// Tolerance class selection: a quantised block has one right encoding, so each decoded value
// must equal the reference's exactly (tests/test_quantize_blocks.cpp compares the bytes).
// check also prints the quantisation error of dequant(y) - x (OpSpec::quantizes_input).
// FLOP model: none. Bytes: x read once, y written once.
#include "reference/quantize_blocks.h"
#include "reference/register.h"
#include "suites/ops/blocks_desc.h"
#include "suites/ops/op_common.h"

namespace dnnb {
namespace {

Result<Signature> quantize_signature(const Problem& p) {
  DNNB_TRY(ops::check_problem(p, ops::float_dtypes(), {}));
  DNNB_TRY(ops::check_block_shape(p));
  auto target = ops::quantize_target(p);
  if (!target) return target.status();
  Signature sig;
  sig.inputs = {ops::tensor_spec("x", p.dtype, p.shape)};
  TensorSpec y = ops::tensor_spec("y", DType::q8_0, p.shape);
  for (DType d : ops::block_formats())
    if (d != DType::q8_0) y.dtype_choices.push_back(d);
  sig.outputs = {y};
  DNNB_TRY(ops::apply_layout(p, sig.inputs[0]));
  return sig;
}

std::vector<ProblemText> quantize_check_problems() {
  std::vector<ProblemText> out;
  for (DType to : ops::block_formats()) {
    const std::string dt = std::string("y.dt=") + dtype_name(to);
    // 7x96: three blocks a row (every edge kind once); 600x512 (9,600 blocks: the edge kinds
    // and the magnitude sweep many times); transposed and padded sources; 1-D and 3-D.
    for (const char* shape : {"7x96", "600x512", "96x4096", "160x96:layout=transposed", "37x160:layout=padded",
                              "8192", "2x3x256"})
      out.push_back(std::string(shape) + (std::string(shape).find(':') == std::string::npos ? ":" : ",") + dt);
  }
  return out;
}

OpSpec make_quantize_blocks_spec() {
  OpSpec spec = ops::op_spec("4", "quantize_blocks", "gguf.quants.quantize(x, type) / OCP MX v1.0 quantisation",
                             ops::float_dtypes(), ToleranceClass::selection);
  spec.check_problems = quantize_check_problems();
  // 256 MiB of source each: weights quantised for llama.cpp (f32 -> q8_0, q4_0) and bf16
  // activations or weights to the MX formats.
  spec.bench_problems = {{"8192x8192:y.dt=q8_0", {DType::f32}},
                         {"8192x8192:y.dt=q4_0", {DType::f32}},
                         {"16384x8192:y.dt=mxfp8", {DType::bf16}},
                         {"16384x8192:y.dt=mxfp4", {DType::bf16}}};
  spec.signature = quantize_signature;
  spec.flops = [](const Problem&) { return 0.0; };
  spec.fill_inputs = ops::fill_quantize_inputs;
  spec.reference = reference::quantize_blocks;
  spec.quantizes_input = 0;
  return spec;
}

// The op with its reference backend writing the blocks themselves (quantize_blocks_into): the
// generic reference backend stores float64 values element by element, which a block format
// cannot take.
bool register_quantize_blocks() {
  OpSpec spec = make_quantize_blocks_spec();
  Implementation impl = reference_implementation(spec);
  impl.run = [](OpCall& call) { return reference::quantize_blocks_into(call.problem, call.inputs, call.outputs); };
  const bool op_added = Registry::instance().add_op(std::move(spec));
  return Registry::instance().add_implementation(std::move(impl)) && op_added;
}

DNNB_REGISTER(register_quantize_blocks());

}  // namespace
}  // namespace dnnb
